package toolcall

// Error is a request error about one parameter, for an OpenAI-style
// invalid_request_error: Param names it the way OpenAI does
// ("tools[2].function.name", "tool_choice.function.name").
type Error struct {
	Param string
	Msg   string
}

// Error returns "param: message".
func (e *Error) Error() string { return e.Param + ": " + e.Msg }

func errorf(param, msg string) *Error { return &Error{Param: param, Msg: msg} }
