// This file is from github.com/ardanlabs/jinja v1.12.0 (Apache-2.0),
// changed for wasmllm: see README.md.

package jinja

import (
	"fmt"
)

// Template is a compiled Jinja template ready for rendering.
type Template struct {
	nodes []node
	src   string
}

// Compile parses a Jinja template source string and returns a compiled
// template that can be rendered multiple times with different data. It
// applies DefaultLimits' MaxDepth to the nesting of blocks and
// expressions.
func Compile(source string) (*Template, error) {
	return CompileLimits(source, Limits{})
}

// CompileLimits is like Compile with lim's MaxDepth (the only limit that
// applies to compiling) bounding the nesting of blocks and expressions. A
// template nested deeper fails with a *LimitError.
func CompileLimits(source string, lim Limits) (*Template, error) {
	lim = lim.resolve()
	segs, err := scan(source)
	if err != nil {
		return nil, fmt.Errorf("jinja scan: %w", err)
	}

	nodes, err := parseTemplate(segs, lim.MaxDepth)
	if err != nil {
		return nil, fmt.Errorf("jinja parse: %w", err)
	}

	return &Template{nodes: nodes, src: source}, nil
}

// Render executes the template with the provided data and returns the
// rendered string. Each call creates an isolated scope so templates are
// safe to render concurrently after compilation. DefaultLimits apply.
func (t *Template) Render(data map[string]any) (string, error) {
	return t.RenderLimits(data, Limits{})
}

// RenderLimits is like Render within lim: a render that would exceed one
// of them fails with a *LimitError naming it.
func (t *Template) RenderLimits(data map[string]any, lim Limits) (string, error) {
	// Convert Go data to Value types.
	vals := make(map[string]Value, len(data))
	for k, v := range data {
		vals[k] = FromGoValue(v)
	}

	return render(t.nodes, vals, lim)
}

// RenderValues is like Render but accepts pre-converted Value data.
func (t *Template) RenderValues(data map[string]Value) (string, error) {
	return render(t.nodes, data, Limits{})
}

// RenderValuesLimits is like RenderValues within lim: a render that would
// exceed one of them fails with a *LimitError naming it.
func (t *Template) RenderValuesLimits(data map[string]Value, lim Limits) (string, error) {
	return render(t.nodes, data, lim)
}

// =============================================================================

// render executes the AST with the given data and returns the result.
func render(nodes []node, data map[string]Value, lim Limits) (out string, err error) {
	b := newBudget(lim)
	e := &evaluator{b: b}
	e.output = limitedBuilder{b: b, max: b.lim.MaxOutputBytes, limit: LimitOutputBytes}

	// A limit is checked deep in helpers without an error result; they
	// panic with it, and it ends the render here.
	defer func() {
		if r := recover(); r != nil {
			lp, ok := r.(limitPanic)
			if !ok {
				panic(r)
			}
			out, err = "", lp.err
		}
	}()

	// Use the cached builtins scope directly. The scope is initialized
	// once at package init and is only read after that (lookupFilter,
	// chained get() through parent links, passed to nested evaluators).
	// No code path writes to e.builtins, so sharing the cached scope
	// across renders is safe and avoids cloning ~20 entries per render.
	e.builtins = cachedBuiltins

	// Create user data scope on top of builtins.
	e.scope = newScope(e.builtins)
	for k, v := range data {
		e.scope.set(k, v)
	}

	if err := e.execNodes(nodes); err != nil {
		return "", err
	}

	return e.output.String(), nil
}
