package grammar

// jsFormats are the supported string formats as regular expressions (in
// the subset RegexGBNF reads, and valid RE2), each a strict subset of what
// a validator accepts.
var jsFormats = map[string]string{
	"date":      jsDate,
	"time":      jsTime,
	"date-time": jsDate + "[Tt]" + jsTime,
	"uuid":      "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
	"email":     jsEmailLocal + "@" + jsEmailLabel + `(?:\.` + jsEmailLabel + "){1,3}",
}

const (
	// jsDate is RFC 3339's full-date with real calendar days: 30-day
	// months, February's 28 days, and the 29th in leap years (divisible
	// by 4, centuries only when divisible by 400).
	jsDate = `(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))` +
		`|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[048]|[2468][048]|[13579][26])00)-02-29)`
	// jsTime is RFC 3339's full-time without leap seconds, with up to 9
	// fraction digits.
	jsTime = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	// jsEmailLocal is a dot-atom local part of at most 48 characters.
	jsEmailLocal = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,16}(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{1,15}){0,2}"
	// jsEmailLabel is a host name label of at most 32 characters.
	jsEmailLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?"
)
