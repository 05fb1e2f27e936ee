// This file is from github.com/ardanlabs/jinja v1.12.0 (Apache-2.0),
// changed for wasmllm: see README.md.

package jinja

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// cachedBuiltins is a read-only scope populated once with all built-in
// globals and filters. It is shared across every render — no code path
// writes to the builtins scope (only chained reads through parent
// links and lookupFilter), so a single shared instance is safe and
// avoids ~20 allocations per render. It is set by init, not by its
// declaration, because the map filter looks filters up in it.
var cachedBuiltins *scope

func init() {
	s := newScope(nil)
	registerGlobals(s)
	registerFilters(s)
	cachedBuiltins = s
}

// =============================================================================
// Global functions
// =============================================================================

func registerGlobals(s *scope) {
	s.set("namespace", newCallableB("namespace", builtinNamespace))
	s.set("raise_exception", newCallableB("raise_exception", builtinRaiseException))
	s.set("range", newCallableB("range", builtinRange))
	s.set("joiner", newCallableB("joiner", builtinJoiner))
	s.set("dict", newCallableB("dict", builtinDict))
	s.set("cycler", newCallableB("cycler", builtinCycler))
	s.set("strftime_now", newCallableB("strftime_now", builtinStrftimeNow))
}

func builtinNamespace(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	return builtinDict(b, args, kwargs)
}

func builtinRaiseException(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return Undefined(), fmt.Errorf("raise_exception: missing message")
	}
	return Undefined(), fmt.Errorf("%s", b.str(args[0]))
}

func builtinRange(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	var start, stop, step int64
	b.scanNums(args...)
	switch len(args) {
	case 1:
		start = 0
		stop = toInt64(args[0])
		step = 1
	case 2:
		start = toInt64(args[0])
		stop = toInt64(args[1])
		step = 1
	case 3:
		start = toInt64(args[0])
		stop = toInt64(args[1])
		step = toInt64(args[2])
	default:
		return Undefined(), fmt.Errorf("range: expected 1-3 arguments, got %d", len(args))
	}

	if step == 0 {
		return Undefined(), fmt.Errorf("range: step must not be zero")
	}

	// Count the items before making them.
	var count uint64
	switch {
	case step > 0 && start < stop:
		count = (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	case step < 0 && start > stop:
		count = (uint64(start)-uint64(stop)-1)/(0-uint64(step)) + 1
	}
	if b != nil && count > uint64(b.lim.MaxRange) {
		b.fail(LimitRange, b.lim.MaxRange)
	}
	b.size(mulSize(int64(min(count, math.MaxInt64)), ValueSize))

	var items []Value
	if count > 0 {
		items = make([]Value, 0, count)
	}
	if step > 0 {
		for i := start; i < stop; i += step {
			items = append(items, NewInt(i))
			// A step beyond the integer limit is also beyond stop.
			if i > math.MaxInt64-step {
				break
			}
		}
	} else {
		for i := start; i > stop; i += step {
			items = append(items, NewInt(i))
			if i < math.MinInt64-step {
				break
			}
		}
	}

	return NewList(items), nil
}

func builtinJoiner(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	sep := ", "
	if len(args) > 0 {
		sep = b.str(args[0])
	}
	if v, ok := kwargs["sep"]; ok {
		sep = b.str(v)
	}

	first := true
	return NewCallable("joiner", func(args []Value, kwargs map[string]Value) (Value, error) {
		if first {
			first = false
			return NewString(""), nil
		}
		return NewString(sep), nil
	}), nil
}

func builtinDict(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	d := NewDict()
	dict := d.AsDict()
	if len(args) > 1 {
		return Undefined(), fmt.Errorf("dict: expected at most one positional argument")
	}
	if len(args) == 1 {
		if !args[0].IsDict() && !args[0].IsList() && !args[0].IsString() {
			return Undefined(), fmt.Errorf("dict: positional argument must be iterable")
		}
		if args[0].IsDict() {
			b.growDict(args[0].AsDict().Len(), args[0].AsDict().Len())
			for _, key := range args[0].AsDict().Keys {
				dict.Set(key, args[0].AsDict().Data[key])
			}
		} else {
			pairs := b.iterableItems(args[0])
			b.growDict(len(pairs), len(pairs))
			for _, pair := range pairs {
				items := b.iterableItems(pair)
				if len(items) != 2 {
					return Undefined(), fmt.Errorf("dict: iterable elements must have length 2")
				}
				dict.Set(b.str(items[0]), items[1])
			}
		}
	}
	b.growDict(dict.Len()+len(kwargs), len(kwargs))
	for k, v := range kwargs {
		dict.Set(k, v)
	}
	return d, nil
}

func builtinStrftimeNow(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	format := "%Y-%m-%d"
	if len(args) > 0 {
		format = b.str(args[0])
	}

	// Convert Python strftime format to Go time format. Neither step
	// makes the text more than 5 times longer ("%B" becomes "September").
	b.size(mulSize(int64(len(format)), 5))
	now := time.Now()
	goFmt := strftimeToGo(format)
	return b.checked(now.Format(goFmt)), nil
}

// strftimeToGo converts a Python strftime format string to a Go time format.
func strftimeToGo(format string) string {
	r := strings.NewReplacer(
		"%Y", "2006",
		"%m", "01",
		"%d", "02",
		"%H", "15",
		"%M", "04",
		"%S", "05",
		"%B", "January",
		"%b", "Jan",
		"%A", "Monday",
		"%a", "Mon",
		"%p", "PM",
		"%I", "03",
		"%Z", "MST",
		"%%", "%",
	)
	return r.Replace(format)
}

func builtinCycler(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return Undefined(), fmt.Errorf("cycler: expected at least one argument")
	}

	idx := 0
	b.items(len(args))
	items := make([]Value, len(args))
	copy(items, args)

	d := NewDict()
	dict := d.AsDict()
	dict.Set("current", items[0])
	dict.Set("next", NewCallable("cycler.next", func(a []Value, kw map[string]Value) (Value, error) {
		v := items[idx]
		idx = (idx + 1) % len(items)
		dict.Set("current", items[idx])
		return v, nil
	}))
	dict.Set("reset", NewCallable("cycler.reset", func(a []Value, kw map[string]Value) (Value, error) {
		idx = 0
		dict.Set("current", items[0])
		return None(), nil
	}))

	return d, nil
}

// =============================================================================
// Filter functions
// =============================================================================

func registerFilters(s *scope) {
	filters := map[string]func(*budget, []Value, map[string]Value) (Value, error){
		"tojson":     filterTojson,
		"from_json":  filterFromjson,
		"fromjson":   filterFromjson,
		"items":      filterItems,
		"join":       filterJoin,
		"default":    filterDefault,
		"d":          filterDefault,
		"trim":       filterTrim,
		"lower":      filterLower,
		"upper":      filterUpper,
		"title":      filterTitle,
		"capitalize": filterCapitalize,
		"first":      filterFirst,
		"last":       filterLast,
		"length":     filterLength,
		"count":      filterLength,
		"reverse":    filterReverse,
		"sort":       filterSort,
		"unique":     filterUnique,
		"list":       filterList,
		"int":        filterInt,
		"float":      filterFloatConv,
		"string":     filterString,
		"safe":       filterSafe,
		"replace":    filterReplace,
		"round":      filterRound,
		"abs":        filterAbs,
		"map":        filterMap,
		"select":     filterSelect,
		"reject":     filterReject,
		"selectattr": filterSelectattr,
		"rejectattr": filterRejectattr,
		"indent":     filterIndent,
		"wordcount":  filterWordcount,
		"escape":     filterEscape,
		"e":          filterEscape,
		"dictsort":   filterDictsort,
		"max":        filterMax,
		"min":        filterMin,
		"sum":        filterSum,
		"batch":      filterBatch,
	}

	for name, fn := range filters {
		s.set("__filter_"+name, newCallableB(name, fn))
	}
}

// lookupFilter retrieves a filter callable from the scope chain.
func lookupFilter(s *scope, name string) (Value, bool) {
	return s.get("__filter_" + name)
}

// =============================================================================
// Test evaluation
// =============================================================================

func evalTest(b *budget, name string, val Value, args []Value) (bool, error) {
	switch name {
	case "defined":
		return !val.IsUndefined(), nil
	case "undefined":
		return val.IsUndefined(), nil
	case "none":
		return val.IsNone(), nil
	case "boolean":
		return val.IsBool(), nil
	case "integer":
		return val.IsInt(), nil
	case "float":
		return val.IsFloat(), nil
	case "number":
		return val.IsNumber(), nil
	case "string":
		return val.IsString(), nil
	case "mapping":
		return val.IsDict(), nil
	case "iterable":
		return val.IsList() || val.IsDict() || val.IsString(), nil
	case "sequence":
		return val.IsList() || val.IsString() || val.IsDict(), nil
	case "callable":
		return val.IsCallable(), nil
	case "true":
		return val.IsBool() && val.AsBool(), nil
	case "false":
		return val.IsBool() && !val.AsBool(), nil
	case "eq", "equalto", "==":
		if len(args) < 1 {
			return false, fmt.Errorf("test %q requires an argument", name)
		}
		return b.equal(val, args[0], 0), nil
	case "ne", "!=":
		if len(args) < 1 {
			return false, fmt.Errorf("test %q requires an argument", name)
		}
		return !b.equal(val, args[0], 0), nil
	case "gt", "greaterthan", ">":
		if len(args) < 1 {
			return false, nil
		}
		order, ordered := b.compare(val, args[0], 0)
		return ordered && order > 0, nil
	case "ge", ">=":
		if len(args) < 1 {
			return false, nil
		}
		order, ordered := b.compare(val, args[0], 0)
		return ordered && order >= 0, nil
	case "lt", "lessthan", "<":
		if len(args) < 1 {
			return false, nil
		}
		order, ordered := b.compare(val, args[0], 0)
		return ordered && order < 0, nil
	case "le", "<=":
		if len(args) < 1 {
			return false, nil
		}
		order, ordered := b.compare(val, args[0], 0)
		return ordered && order <= 0, nil
	case "in":
		if len(args) < 1 {
			return false, nil
		}
		return b.contains(args[0], val), nil
	case "odd":
		if val.IsInt() {
			return val.AsInt()%2 != 0, nil
		}
		return false, nil
	case "even":
		if val.IsInt() {
			return val.AsInt()%2 == 0, nil
		}
		return false, nil
	case "divisibleby":
		b.scanNums(val)
		b.scanNums(args...)
		if len(args) == 0 || toFloat64(args[0]) == 0 {
			return false, fmt.Errorf("divisibleby requires a nonzero divisor")
		}
		if val.IsInt() && args[0].IsInt() {
			return val.AsInt()%args[0].AsInt() == 0, nil
		}
		return math.Mod(toFloat64(val), toFloat64(args[0])) == 0, nil
	case "upper":
		if val.IsString() {
			s := val.AsString()
			b.temp(int64(len(s)))
			return s == strings.ToUpper(s) && strings.ContainsFunc(s, unicode.IsUpper), nil
		}
		return false, nil
	case "lower":
		if val.IsString() {
			s := val.AsString()
			b.temp(int64(len(s)))
			return s == strings.ToLower(s) && strings.ContainsFunc(s, unicode.IsLower), nil
		}
		return false, nil
	case "sameas":
		if len(args) < 1 {
			return false, nil
		}
		if val.kind != args[0].kind {
			return false, nil
		}
		if val.IsList() || val.IsDict() {
			return val.v == args[0].v, nil
		}
		return b.equal(val, args[0], 0), nil
	}

	return false, fmt.Errorf("unknown test %q", name)
}

// =============================================================================
// Filter implementations
// =============================================================================

func filterTojson(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}

	// Check both encoding paths before recursively converting containers.
	if b.containsCycle(args[0], nil) {
		return Undefined(), fmt.Errorf("tojson: circular reference detected")
	}

	itemSeparator := ", "
	keySeparator := ": "
	indent := builtinArgument(args, kwargs, 2, "indent", None())
	var padding *string
	if !indent.IsNone() && !indent.IsUndefined() {
		pad := ""
		if indent.IsString() {
			pad = indent.AsString()
		} else {
			n := max(0, toInt64(indent))
			b.size(n)
			pad = strings.Repeat(" ", int(n))
		}
		padding = &pad
		itemSeparator = ","
	}
	if separators := builtinArgument(args, kwargs, 3, "separators", None()); !separators.IsNone() {
		if !separators.IsList() || separators.AsList().Len() != 2 {
			return Undefined(), fmt.Errorf("tojson: separators must contain two strings")
		}

		items := separators.AsList().Items
		if !items[0].IsString() || !items[1].IsString() {
			return Undefined(), fmt.Errorf("tojson: separators must contain two strings")
		}
		itemSeparator = items[0].AsString()
		keySeparator = items[1].AsString()
	}

	sb := b.newBuilder()
	sortKeys := builtinArgument(args, kwargs, 4, "sort_keys", NewBool(false)).IsTruthy()
	if err := encodeValueJSON(b, sb, args[0], itemSeparator, keySeparator, padding, sortKeys, 0); err != nil {
		return Undefined(), err
	}
	out := sb.String()
	if builtinArgument(args, kwargs, 1, "ensure_ascii", NewBool(false)).IsTruthy() {
		ascii := b.newBuilder()
		for _, r := range out {
			if r < 127 {
				ascii.WriteRune(r)
			} else if r <= 0xffff {
				fmt.Fprintf(ascii, "\\u%04x", r)
			} else {
				r -= 0x10000
				fmt.Fprintf(ascii, "\\u%04x\\u%04x", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			}
		}
		out = ascii.String()
	}
	return NewString(out), nil
}

// encodeValueJSON writes the JSON encoding of v directly into sb without
// going through an intermediate Go-typed tree.
//
// The output matches Python json.dumps's defaults so that prompts rendered by
// this engine are byte-for-byte identical to those produced by HuggingFace's
// reference Jinja2 implementation:
//
//   - Item separator is ", " (with a trailing space), key/value separator is
//     ": " — Python's default when no indent is given.
//   - HTML metacharacters '&', '<', '>' are NOT escaped to \u0026 / \u003c /
//     \u003e (Go's encoding/json escapes these by default; Python does not).
//
// Both differences would otherwise change the tokenization of every tool
// definition that ends up in a chat prompt.
func encodeValueJSON(b *budget, sb *limitedBuilder, v Value, itemSeparator, keySeparator string, padding *string, sortKeys bool, depth int) error {
	newline := func(level int) {
		if padding != nil {
			sb.WriteByte('\n')
			for range level {
				sb.WriteString(*padding)
			}
		}
	}
	b.step(1)
	b.nested(depth)
	switch v.kind {
	case KindUndefined, KindNone, KindCallable:
		sb.WriteString("null")
		return nil

	case KindBool:
		if v.AsBool() {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
		return nil

	case KindInt:
		var buf [20]byte
		sb.Write(strconv.AppendInt(buf[:0], v.AsInt(), 10))
		return nil

	case KindFloat:
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			sb.WriteString("NaN")
		case math.IsInf(f, 1):
			sb.WriteString("Infinity")
		case math.IsInf(f, -1):
			sb.WriteString("-Infinity")
		default:
			sb.WriteString(pythonFloat(f))
		}
		return nil

	case KindString:
		return encodeJSONString(sb, v.AsString())

	case KindList:
		sb.WriteByte('[')
		for i, item := range v.AsList().Items {
			if i > 0 {
				sb.WriteString(itemSeparator)
			}
			newline(depth + 1)
			if err := encodeValueJSON(b, sb, item, itemSeparator, keySeparator, padding, sortKeys, depth+1); err != nil {
				return err
			}
		}
		if v.AsList().Len() > 0 {
			newline(depth)
		}
		sb.WriteByte(']')
		return nil

	case KindDict:
		sb.WriteByte('{')
		d := v.AsDict()
		keys := d.Keys
		if sortKeys {
			b.temp(mulSize(int64(len(keys)), 16))
			b.step(int64(len(keys)))
			keys = slices.Clone(keys)
			slices.Sort(keys)
		}
		for i, key := range keys {
			if i > 0 {
				sb.WriteString(itemSeparator)
			}
			newline(depth + 1)
			if err := encodeJSONString(sb, key); err != nil {
				return err
			}
			sb.WriteString(keySeparator)
			if err := encodeValueJSON(b, sb, d.Data[key], itemSeparator, keySeparator, padding, sortKeys, depth+1); err != nil {
				return err
			}
		}
		if len(keys) > 0 {
			newline(depth)
		}
		sb.WriteByte('}')
		return nil
	}

	sb.WriteString("null")
	return nil
}

// encodeJSONString writes the JSON encoding of s without HTML-escaping (no
// \u0026 / \u003c / \u003e), matching Python json.dumps's default behaviour.
func encodeJSONString(sb *limitedBuilder, s string) error {
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case '\b':
			sb.WriteString("\\b")
		case '\f':
			sb.WriteString("\\f")
		case '\n':
			sb.WriteString("\\n")
		case '\r':
			sb.WriteString("\\r")
		case '\t':
			sb.WriteString("\\t")
		default:
			if r < 0x20 {
				fmt.Fprintf(sb, "\\u%04x", r)
			} else {
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
	return nil
}

func filterFromjson(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 || !args[0].IsString() {
		return Undefined(), nil
	}

	dec := json.NewDecoder(strings.NewReader(args[0].AsString()))
	dec.UseNumber()
	result, err := decodeJSONValue(b, dec, 0)
	if err != nil {
		return Undefined(), fmt.Errorf("fromjson: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return Undefined(), fmt.Errorf("fromjson: %w", err)
		}
		return Undefined(), fmt.Errorf("fromjson: trailing data")
	}

	return result, nil
}

// decodeJSONValue builds ordered containers and converts numeric tokens without
// the rounding or string fallback of decoding through plain Go values.
func decodeJSONValue(b *budget, dec *json.Decoder, depth int) (Value, error) {
	b.step(1)
	token, err := dec.Token()
	if err != nil {
		return Undefined(), err
	}

	switch token := token.(type) {
	case json.Number:
		if !strings.ContainsAny(string(token), ".eE") {
			n, err := token.Int64()
			if err != nil {
				return Undefined(), fmt.Errorf("integer %q: %w", token, err)
			}
			return NewInt(n), nil
		}
		n, err := token.Float64()
		if err != nil {
			return Undefined(), fmt.Errorf("float %q: %w", token, err)
		}
		return NewFloat(n), nil

	case json.Delim:
		switch token {
		case '{':
			b.nested(depth + 1)
			result := NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return Undefined(), err
				}
				value, err := decodeJSONValue(b, dec, depth+1)
				if err != nil {
					return Undefined(), err
				}
				if !result.AsDict().Has(key.(string)) {
					b.growDict(result.AsDict().Len()+1, 1)
				}
				result.AsDict().Set(key.(string), value)
			}
			if _, err := dec.Token(); err != nil {
				return Undefined(), err
			}
			return result, nil

		case '[':
			b.nested(depth + 1)
			var items []Value
			for dec.More() {
				value, err := decodeJSONValue(b, dec, depth+1)
				if err != nil {
					return Undefined(), err
				}
				b.growList(len(items)+1, 1)
				items = append(items, value)
			}
			if _, err := dec.Token(); err != nil {
				return Undefined(), err
			}
			return NewList(items), nil
		}
		return Undefined(), fmt.Errorf("unexpected JSON delimiter %q", token)

	default:
		return FromGoValue(token), nil
	}
}

func filterItems(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 || args[0].IsUndefined() {
		return NewList(nil), nil
	}

	// Python jinja2's |items filter raises TemplateError when applied to
	// anything that isn't a mapping, and several chat templates rely on
	// that error to bail out of an unsupported branch (e.g. when a
	// tool_call's `arguments` is a JSON string instead of an object).
	// Silently returning an empty list here let those templates render
	// invalid prompts. The wording deliberately matches Python jinja2 so
	// templates that surface this string get an identical message.
	if !args[0].IsDict() {
		return Undefined(), fmt.Errorf("can only get item pairs from a mapping")
	}

	d := args[0].AsDict()
	b.items(3 * d.Len())
	items := make([]Value, 0, d.Len())
	for _, key := range d.Keys {
		pair := NewList([]Value{NewString(key), d.Data[key]})
		items = append(items, pair)
	}

	return NewList(items), nil
}

func filterJoin(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}

	sep := ""
	if len(args) > 1 {
		sep = b.str(args[1])
	}
	if s, ok := kwargs["d"]; ok {
		sep = b.str(s)
	}

	attr := ""
	if len(args) > 2 && !args[2].IsNone() {
		attr = b.str(args[2])
	}
	if a, ok := kwargs["attribute"]; ok {
		attr = b.str(a)
	}

	items := b.iterableItems(args[0])
	b.temp(mulSize(int64(len(items)), 16))
	parts := make([]string, len(items))
	// The joined length, counted before it is built.
	total := mulSize(int64(max(len(items)-1, 0)), int64(len(sep)))
	b.check(total)
	for i, item := range items {
		b.step(1)
		if attr != "" {
			item = builtinAttribute(b, item, attr, Undefined())
		}
		parts[i] = b.str(item)
		total = addSize(total, int64(len(parts[i])))
		b.check(total)
	}
	b.size(total)

	return NewString(strings.Join(parts, sep)), nil
}

func filterDefault(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return Undefined(), nil
	}

	val := args[0]
	defVal := NewString("")
	if len(args) > 1 {
		defVal = args[1]
	}
	if v, ok := kwargs["default_value"]; ok {
		defVal = v
	}

	boolean := false
	if len(args) > 2 && args[2].IsBool() {
		boolean = args[2].AsBool()
	} else if b, ok := kwargs["boolean"]; ok && b.IsBool() {
		boolean = b.AsBool()
	}

	if val.IsUndefined() {
		return defVal, nil
	}

	if boolean && !val.IsTruthy() {
		return defVal, nil
	}

	return val, nil
}

func filterTrim(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	s := b.str(args[0])
	b.scan(len(s))
	if len(args) > 1 {
		chars := b.str(args[1])
		s = strings.Trim(s, chars)
	} else {
		s = strings.TrimSpace(s)
	}
	return NewString(s), nil
}

func filterLower(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	s := b.str(args[0])
	b.size(int64(len(s)))
	return b.checked(strings.ToLower(s)), nil
}

func filterUpper(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	s := b.str(args[0])
	b.size(int64(len(s)))
	return b.checked(strings.ToUpper(s)), nil
}

func filterTitle(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}

	s := b.str(args[0])
	b.temp(4 * int64(len(s)))
	b.size(int64(len(s)))
	runes := []rune(s)
	inWord := false
	for i, r := range runes {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if !inWord {
				runes[i] = unicode.ToUpper(r)
				inWord = true
			} else {
				runes[i] = unicode.ToLower(r)
			}
		} else {
			inWord = false
		}
	}
	return b.checked(string(runes)), nil
}

func filterCapitalize(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	s := b.str(args[0])
	if len(s) == 0 {
		return NewString(""), nil
	}
	b.temp(4 * int64(len(s)))
	b.size(int64(len(s)))
	runes := []rune(s)
	runes[0] = unicode.ToUpper(runes[0])
	for i := 1; i < len(runes); i++ {
		runes[i] = unicode.ToLower(runes[i])
	}
	return b.checked(string(runes)), nil
}

func filterFirst(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return Undefined(), nil
	}
	if args[0].IsString() {
		// The first character, without making a list of them all.
		for _, r := range args[0].AsString() {
			return NewString(string(r)), nil
		}
		return Undefined(), nil
	}
	items := b.iterableItems(args[0])
	if len(items) == 0 {
		return Undefined(), nil
	}
	return items[0], nil
}

func filterLast(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return Undefined(), nil
	}
	if s := args[0]; s.IsString() && utf8.ValidString(s.AsString()) {
		// The last character, without making a list of them all.
		b.scan(len(s.AsString()))
		if s.AsString() == "" {
			return Undefined(), nil
		}
		r, _ := utf8.DecodeLastRuneInString(s.AsString())
		return NewString(string(r)), nil
	}
	items := b.iterableItems(args[0])
	if len(items) == 0 {
		return Undefined(), nil
	}
	return items[len(items)-1], nil
}

func filterLength(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewInt(0), nil
	}

	v := args[0]
	switch {
	case v.IsList():
		return NewInt(int64(v.AsList().Len())), nil
	case v.IsDict():
		return NewInt(int64(v.AsDict().Len())), nil
	case v.IsString():
		b.scan(len(v.AsString()))
		return NewInt(int64(utf8.RuneCountInString(v.AsString()))), nil
	}

	return NewInt(0), nil
}

func filterReverse(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	v := args[0]
	if v.IsString() {
		b.temp(4 * int64(len(v.AsString())))
		b.size(int64(len(v.AsString())))
		runes := []rune(v.AsString())
		for i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {
			runes[i], runes[j] = runes[j], runes[i]
		}
		return b.checked(string(runes)), nil
	}

	if v.IsList() {
		src := v.AsList().Items
		b.items(len(src))
		items := make([]Value, len(src))
		for i, item := range src {
			items[len(src)-1-i] = item
		}
		return NewList(items), nil
	}

	return v, nil
}

func filterSort(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 || !args[0].IsList() {
		return NewList(nil), nil
	}

	src := args[0].AsList().Items
	b.items(len(src))
	items := make([]Value, len(src))
	copy(items, src)

	reverse := false
	if r, ok := kwargs["reverse"]; ok && r.IsBool() {
		reverse = r.AsBool()
	}

	attribute := ""
	if a, ok := kwargs["attribute"]; ok {
		attribute = b.str(a)
	}

	sort.SliceStable(items, func(i, j int) bool {
		left, right := items[i], items[j]
		if attribute != "" {
			if left.IsDict() {
				left, _ = left.AsDict().Get(attribute)
			}
			if right.IsDict() {
				right, _ = right.AsDict().Get(attribute)
			}
		}
		order, ordered := b.compare(left, right, 0)
		if !ordered {
			return false
		}
		if reverse {
			return order > 0
		}
		return order < 0
	})

	return NewList(items), nil
}

func filterUnique(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	src := b.iterableItems(args[0])
	caseSensitive := builtinArgument(args, kwargs, 1, "case_sensitive", NewBool(false)).IsTruthy()
	attribute := builtinArgument(args, kwargs, 2, "attribute", None())
	b.items(2 * len(src))
	var seen []Value
	var items []Value
	for _, item := range src {
		key := item
		if !attribute.IsNone() {
			key = builtinAttribute(b, item, b.str(attribute), Undefined())
		}
		if !caseSensitive && key.IsString() {
			b.temp(int64(len(key.AsString())))
			key = NewString(strings.ToLower(key.AsString()))
		}
		if !slices.ContainsFunc(seen, func(s Value) bool { return b.equal(key, s, 0) }) {
			seen = append(seen, key)
			items = append(items, item)
		}
	}

	return NewList(items), nil
}

func filterList(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	v := args[0]
	if v.IsList() {
		b.items(v.AsList().Len())
		return NewList(slices.Clone(v.AsList().Items)), nil
	}
	if v.IsDict() {
		b.items(2 * v.AsDict().Len())
		keys := v.AsDict().OrderedKeys()
		items := make([]Value, len(keys))
		for i, key := range keys {
			items[i] = NewString(key)
		}
		return NewList(items), nil
	}
	if v.IsString() {
		b.temp(4 * int64(len(v.AsString())))
		b.items(utf8.RuneCountInString(v.AsString()))
		runes := []rune(v.AsString())
		items := make([]Value, len(runes))
		for i, r := range runes {
			items[i] = NewString(string(r))
		}
		return NewList(items), nil
	}

	if v.IsUndefined() {
		return NewList(nil), nil
	}
	return Undefined(), fmt.Errorf("list: value is not iterable")
}

func filterInt(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewInt(0), nil
	}
	def := builtinArgument(args, kwargs, 1, "default", NewInt(0))
	v := args[0]
	b.scanNums(v)
	if v.IsInt() || v.IsBool() {
		return NewInt(toInt64(v)), nil
	}
	if v.IsString() {
		s := strings.TrimSpace(v.AsString())
		base := int(toInt64(builtinArgument(args, kwargs, 2, "base", NewInt(10))))
		// Unlike Go's explicit-base parser, Python accepts matching prefixes.
		sign, digits := "", s
		if strings.HasPrefix(digits, "+") || strings.HasPrefix(digits, "-") {
			sign, digits = digits[:1], digits[1:]
		}
		prefix := map[int]string{2: "0b", 8: "0o", 16: "0x"}[base]
		if prefix != "" && strings.HasPrefix(strings.ToLower(digits), prefix) {
			s = sign + digits[2:]
		}
		if n, err := strconv.ParseInt(s, base, 64); err == nil {
			return NewInt(n), nil
		}
	}
	f, ok := builtinFloat(v)
	if ok && !math.IsNaN(f) && !math.IsInf(f, 0) && f >= -0x1p63 && f < 0x1p63 {
		return NewInt(int64(f)), nil
	}
	return def, nil
}

func filterFloatConv(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewFloat(0), nil
	}
	b.scanNums(args[0])
	if f, ok := builtinFloat(args[0]); ok {
		return NewFloat(f), nil
	}
	return builtinArgument(args, kwargs, 1, "default", NewFloat(0)), nil
}

func filterString(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	return NewString(b.str(args[0])), nil
}

func filterSafe(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	return args[0], nil
}

func filterReplace(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) < 3 {
		return NewString(""), fmt.Errorf("replace: expected at least 3 arguments")
	}
	s := b.str(args[0])
	old := b.str(args[1])
	newStr := b.str(args[2])

	count := -1
	if len(args) > 3 {
		b.scanNums(args[3])
		count = int(toInt64(args[3]))
	}
	if c, ok := kwargs["count"]; ok {
		b.scanNums(c)
		count = int(toInt64(c))
	}

	b.size(replaceSize(s, old, newStr, count))
	return NewString(strings.Replace(s, old, newStr, count)), nil
}

func filterRound(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewFloat(0), nil
	}

	precision := int64(0)
	b.scanNums(args...)
	for _, v := range kwargs {
		b.scanNums(v)
	}
	if len(args) > 1 {
		precision = toInt64(args[1])
	}
	if p, ok := kwargs["precision"]; ok {
		precision = toInt64(p)
	}

	f := toFloat64(args[0])
	pow := math.Pow(10, float64(precision))
	method := b.str(builtinArgument(args, kwargs, 2, "method", NewString("common")))
	switch method {
	case "ceil":
		return NewFloat(math.Ceil(f*pow) / pow), nil
	case "floor":
		return NewFloat(math.Floor(f*pow) / pow), nil
	case "common":
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return NewFloat(f), nil
		}
		if precision >= 0 && precision <= 323 {
			// Decimal formatting rounds the actual binary value, not f*10^n.
			n, err := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(precision), 64), 64)
			if err != nil {
				return Undefined(), fmt.Errorf("round: %w", err)
			}
			return NewFloat(n), nil
		}
		if precision > 323 {
			return NewFloat(f), nil
		}
		if precision < -308 {
			return NewFloat(math.Copysign(0, f)), nil
		}
		return NewFloat(math.RoundToEven(f*pow) / pow), nil
	default:
		return Undefined(), fmt.Errorf("round: method must be common, ceil or floor")
	}
}

func filterAbs(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewInt(0), nil
	}

	v := args[0]
	if v.IsInt() {
		n := v.AsInt()
		if n < 0 {
			n = -n
		}
		return NewInt(n), nil
	}
	if v.IsFloat() {
		return NewFloat(math.Abs(v.AsFloat())), nil
	}

	return NewInt(0), nil
}

func filterMap(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	src := b.iterableItems(args[0])

	// map(attribute="name") form
	if attr, ok := kwargs["attribute"]; ok {
		attrName := b.str(attr)
		defVal := Undefined()
		if d, ok := kwargs["default"]; ok {
			defVal = d
		}

		b.items(len(src))
		items := make([]Value, len(src))
		for i, item := range src {
			b.step(1)
			items[i] = builtinAttribute(b, item, attrName, defVal)
		}
		return NewList(items), nil
	}

	if len(args) < 2 {
		return Undefined(), fmt.Errorf("map requires a filter argument")
	}
	// The built-in filters, which registerFilters would make again.
	filter, ok := lookupFilter(cachedBuiltins, b.str(args[1]))
	if !ok {
		return Undefined(), fmt.Errorf("unknown filter %q", b.str(args[1]))
	}
	b.items(len(src))
	items := make([]Value, len(src))
	for i, item := range src {
		b.step(1)
		callArgs := append([]Value{item}, args[2:]...)
		v, err := filter.AsCallable().bfn(b, callArgs, kwargs)
		if err != nil {
			return Undefined(), err
		}
		items[i] = v
	}
	return NewList(items), nil
}

func filterSelect(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	list := NewList(b.iterableItems(args[0])).AsList()
	testName := ""
	if len(args) > 1 && args[1].IsString() {
		testName = args[1].AsString()
	}

	var testArgs []Value
	if len(args) > 2 {
		testArgs = args[2:]
	}

	var items []Value
	for _, item := range list.Items {
		b.step(1)
		if testName == "" {
			if item.IsTruthy() {
				items = append(items, item)
			}
		} else {
			result, err := evalTest(b, testName, item, testArgs)
			if err != nil {
				return Undefined(), err
			}
			if result {
				items = append(items, item)
			}
		}
	}

	return NewList(items), nil
}

func filterReject(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	list := NewList(b.iterableItems(args[0])).AsList()
	testName := ""
	if len(args) > 1 && args[1].IsString() {
		testName = args[1].AsString()
	}

	var testArgs []Value
	if len(args) > 2 {
		testArgs = args[2:]
	}

	var items []Value
	for _, item := range list.Items {
		b.step(1)
		if testName == "" {
			if !item.IsTruthy() {
				items = append(items, item)
			}
		} else {
			result, err := evalTest(b, testName, item, testArgs)
			if err != nil {
				return Undefined(), err
			}
			if !result {
				items = append(items, item)
			}
		}
	}

	return NewList(items), nil
}

func filterSelectattr(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) < 2 {
		return NewList(nil), nil
	}

	list := NewList(b.iterableItems(args[0])).AsList()
	attrName := b.str(args[1])
	testName := "truthy"
	if len(args) > 2 {
		testName = b.str(args[2])
	}

	var testArgs []Value
	if len(args) > 3 {
		testArgs = args[3:]
	}

	var items []Value
	for _, item := range list.Items {
		b.step(1)
		attrVal := builtinAttribute(b, item, attrName, Undefined())

		if testName == "truthy" {
			if attrVal.IsTruthy() {
				items = append(items, item)
			}
		} else {
			result, err := evalTest(b, testName, attrVal, testArgs)
			if err != nil {
				return Undefined(), err
			}
			if result {
				items = append(items, item)
			}
		}
	}

	return NewList(items), nil
}

func filterRejectattr(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) < 2 {
		return NewList(nil), nil
	}

	list := NewList(b.iterableItems(args[0])).AsList()
	attrName := b.str(args[1])
	testName := "truthy"
	if len(args) > 2 {
		testName = b.str(args[2])
	}

	var testArgs []Value
	if len(args) > 3 {
		testArgs = args[3:]
	}

	var items []Value
	for _, item := range list.Items {
		b.step(1)
		attrVal := builtinAttribute(b, item, attrName, Undefined())

		if testName == "truthy" {
			if !attrVal.IsTruthy() {
				items = append(items, item)
			}
		} else {
			result, err := evalTest(b, testName, attrVal, testArgs)
			if err != nil {
				return Undefined(), err
			}
			if !result {
				items = append(items, item)
			}
		}
	}

	return NewList(items), nil
}

func filterIndent(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}

	s := b.str(args[0])
	width := builtinArgument(args, kwargs, 1, "width", NewInt(4))
	pad := ""
	if width.IsString() {
		pad = width.AsString()
	} else {
		n := max(0, toInt64(width))
		b.size(n)
		pad = strings.Repeat(" ", int(n))
	}

	indentFirst := false
	if len(args) > 2 {
		indentFirst = args[2].IsTruthy()
	}
	if f, ok := kwargs["first"]; ok {
		indentFirst = f.IsTruthy()
	}

	blank := builtinArgument(args, kwargs, 3, "blank", NewBool(false)).IsTruthy()
	// Python splitlines normalizes all line boundaries, including CRLF.
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\v", "\n", "\f", "\n", "\x1c", "\n", "\x1d", "\n", "\x1e", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(s)
	b.scan(len(s))
	lines := strings.Count(s, "\n") + 1
	b.temp(mulSize(int64(lines), 16))
	split := strings.Split(s, "\n")
	// The indented length, counted before the lines are padded.
	padded := 0
	for i, line := range split {
		if i == 0 && !indentFirst {
			continue
		}
		if line != "" || blank || (i == 0 && indentFirst) {
			padded++
		}
	}
	total := addSize(int64(len(s)), mulSize(int64(padded), int64(len(pad))))
	b.size(total)
	b.temp(total)
	for i, line := range split {
		if i == 0 && !indentFirst {
			continue
		}
		if line != "" || blank || (i == 0 && indentFirst) {
			split[i] = pad + line
		}
	}

	return NewString(strings.Join(split, "\n")), nil
}

func filterWordcount(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewInt(0), nil
	}
	// Count the words without making a list of them.
	s := b.str(args[0])
	b.scan(len(s))
	words, inWord := 0, false
	for _, r := range s {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsNumber(r) {
			inWord = false
		} else if !inWord {
			words++
			inWord = true
		}
	}
	return NewInt(int64(words)), nil
}

func filterEscape(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewString(""), nil
	}
	s := b.str(args[0])
	b.scan(len(s))
	b.size(int64(len(s)) + 4*int64(strings.Count(s, "&")+strings.Count(s, `"`)+strings.Count(s, "'")) + 3*int64(strings.Count(s, "<")+strings.Count(s, ">")))
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, ">", "&gt;")
	s = strings.ReplaceAll(s, `"`, "&#34;")
	s = strings.ReplaceAll(s, "'", "&#39;")
	return NewString(s), nil
}

func filterDictsort(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 || !args[0].IsDict() {
		return NewList(nil), nil
	}

	d := args[0].AsDict()
	reverse := false
	if r, ok := kwargs["reverse"]; ok && r.IsBool() {
		reverse = r.AsBool()
	}

	b.items(4 * len(d.Keys))
	b.step(int64(len(d.Keys)))
	keys := make([]string, len(d.Keys))
	copy(keys, d.Keys)

	sort.SliceStable(keys, func(i, j int) bool {
		if reverse {
			return keys[i] > keys[j]
		}
		return keys[i] < keys[j]
	})

	items := make([]Value, len(keys))
	for i, key := range keys {
		items[i] = NewList([]Value{NewString(key), d.Data[key]})
	}

	return NewList(items), nil
}

func filterMax(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	return filterExtremum(b, args, kwargs, 1)
}

func filterMin(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	return filterExtremum(b, args, kwargs, -1)
}

func filterExtremum(b *budget, args []Value, kwargs map[string]Value, direction int) (Value, error) {
	if len(args) == 0 {
		return Undefined(), nil
	}
	items := b.iterableItems(args[0])
	if len(items) == 0 {
		return Undefined(), nil
	}
	attribute := builtinArgument(args, kwargs, 2, "attribute", None())
	caseSensitive := builtinArgument(args, kwargs, 1, "case_sensitive", NewBool(false)).IsTruthy()
	key := func(item Value) Value {
		if !attribute.IsNone() {
			item = builtinAttribute(b, item, b.str(attribute), Undefined())
		}
		if !caseSensitive && item.IsString() {
			b.temp(int64(len(item.AsString())))
			item = NewString(strings.ToLower(item.AsString()))
		}
		return item
	}
	best, bestKey := items[0], key(items[0])
	for _, item := range items[1:] {
		itemKey := key(item)
		if order, ordered := b.compare(itemKey, bestKey, 0); ordered && order*direction > 0 {
			best, bestKey = item, itemKey
		}
	}
	return best, nil
}

func filterSum(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	sum := builtinArgument(args, kwargs, 2, "start", NewInt(0))
	if len(args) == 0 {
		return sum, nil
	}
	attribute := builtinArgument(args, kwargs, 1, "attribute", None())
	for _, item := range b.iterableItems(args[0]) {
		b.step(1)
		if !attribute.IsNone() {
			item = builtinAttribute(b, item, b.str(attribute), Undefined())
		}
		if !(item.IsNumber() || item.IsBool()) || !(sum.IsNumber() || sum.IsBool()) {
			return Undefined(), fmt.Errorf("sum: expected numeric values")
		}
		sum = addValues(b, sum, item)
	}
	return sum, nil
}

func filterBatch(b *budget, args []Value, kwargs map[string]Value) (Value, error) {
	if len(args) == 0 {
		return NewList(nil), nil
	}

	list := NewList(b.iterableItems(args[0])).AsList()
	b.scanNums(builtinArgument(args, kwargs, 1, "linecount", NewInt(0)))
	linecount := int(toInt64(builtinArgument(args, kwargs, 1, "linecount", NewInt(0))))
	if linecount <= 0 {
		return NewList(nil), nil
	}

	var batches []Value
	fill := builtinArgument(args, kwargs, 2, "fill_with", None())
	b.items((list.Len() + linecount - 1) / linecount)
	for i := 0; i < list.Len(); i += linecount {
		end := min(i+linecount, list.Len())
		if fill.IsNone() {
			b.items(end - i)
		} else {
			b.items(linecount)
		}
		batch := make([]Value, end-i)
		copy(batch, list.Items[i:end])
		if !fill.IsNone() {
			for len(batch) < linecount {
				batch = append(batch, fill)
			}
		}
		batches = append(batches, NewList(batch))
	}

	return NewList(batches), nil
}

// =============================================================================
// Helpers
// =============================================================================

func builtinArgument(args []Value, kwargs map[string]Value, index int, name string, fallback Value) Value {
	if value, ok := kwargs[name]; ok {
		return value
	}
	if len(args) > index {
		return args[index]
	}
	return fallback
}

func builtinAttribute(b *budget, v Value, path string, fallback Value) Value {
	for part := range strings.SplitSeq(path, ".") {
		if v.IsDict() {
			v, _ = v.AsDict().Get(part)
		} else if index, err := strconv.Atoi(part); err == nil && index >= 0 {
			items := b.iterableItems(v)
			v = Undefined()
			if index < len(items) {
				v = items[index]
			}
		} else {
			v = Undefined()
		}
		if v.IsUndefined() {
			v = fallback
		}
	}
	return v
}

func builtinFloat(v Value) (float64, bool) {
	if v.IsNumber() || v.IsBool() {
		return toFloat64(v), true
	}
	if v.IsString() {
		f, err := strconv.ParseFloat(strings.TrimSpace(v.AsString()), 64)
		return f, err == nil || math.IsInf(f, 0)
	}
	return 0, false
}

func toInt64(v Value) int64 {
	switch {
	case v.IsInt():
		return v.AsInt()
	case v.IsFloat():
		return int64(v.AsFloat())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
		return 0
	case v.IsString():
		s := v.AsString()
		var n int64
		fmt.Sscanf(s, "%d", &n)
		return n
	}
	return 0
}

func toFloat64(v Value) float64 {
	switch {
	case v.IsFloat():
		return v.AsFloat()
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsBool():
		if v.AsBool() {
			return 1
		}
		return 0
	case v.IsString():
		s := v.AsString()
		var f float64
		fmt.Sscanf(s, "%f", &f)
		return f
	}
	return 0
}

// compareIntFloat compares without rounding i to a float. f must not be NaN.
func compareIntFloat(i int64, f float64) int {
	if f >= 0x1p63 {
		return -1
	}
	if f < -0x1p63 {
		return 1
	}
	if order := cmp.Compare(i, int64(f)); order != 0 {
		return order
	}
	// The integer parts match; only a fractional component can differ.
	return cmp.Compare(float64(i), f)
}

// printScalar converts a Value that is not a list or dict to its template
// output string. Unlike String() which returns a Python-style repr, it
// returns the raw text for template rendering (no quotes around strings,
// empty string for Undefined). (*budget).str prints lists and dicts too.
func printScalar(v Value) string {
	switch v.kind {
	case KindUndefined:
		return ""
	case KindNone:
		return "None"
	case KindBool:
		if v.AsBool() {
			return "True"
		}
		return "False"
	case KindInt:
		return fmt.Sprintf("%d", v.AsInt())
	case KindFloat:
		return pythonFloat(v.AsFloat())
	case KindString:
		return v.AsString()
	case KindList:
		return v.String()
	case KindDict:
		return v.String()
	case KindCallable:
		return ""
	}
	return ""
}

func pythonFloat(f float64) string {
	if math.IsNaN(f) {
		return "nan"
	}
	if math.IsInf(f, 1) {
		return "inf"
	}
	if math.IsInf(f, -1) {
		return "-inf"
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
