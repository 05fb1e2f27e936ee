package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"wasmllm/tokenizer/internal/jinja"
)

// maxStrftimeFormat bounds a strftime_now format, whose output may be
// several times longer (%B is "September"): real ones are a few bytes.
const maxStrftimeFormat = 4096

// strftimeNow is the strftime_now(format) global of Hugging Face chat
// templates, on the given clock.
func strftimeNow(now func() time.Time) jinja.Value {
	if now == nil {
		now = time.Now
	}
	return jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		if len(args[0].AsString()) > maxStrftimeFormat {
			return jinja.Undefined(), fmt.Errorf("strftime_now format longer than %d bytes", maxStrftimeFormat)
		}
		return jinja.NewString(strftime(args[0].AsString(), now())), nil
	})
}

// strftime formats t with the C/Python directives chat templates use.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case '-':
			// %-d and %-m (glibc): no padding.
			if i+1 < len(format) {
				i++
				switch format[i] {
				case 'd':
					fmt.Fprintf(&b, "%d", t.Day())
				case 'm':
					fmt.Fprintf(&b, "%d", int(t.Month()))
				case 'H':
					fmt.Fprintf(&b, "%d", t.Hour())
				default:
					b.WriteString("%-" + string(format[i]))
				}
			}
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
