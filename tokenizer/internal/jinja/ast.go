// This file is from github.com/ardanlabs/jinja v1.12.0 (Apache-2.0),
// changed for wasmllm: see README.md.

package jinja

// node is the interface for all AST nodes.
type node interface {
	nodeType() string
}

// expr is the interface for expression nodes (evaluable).
type expr interface {
	node
	exprNode()
}

// =========================================================================
// Template-level nodes
// =========================================================================

// textNode represents literal text output.
type textNode struct {
	text string
}

func (n *textNode) nodeType() string { return "text" }

// outputNode represents {{ expression }} output.
type outputNode struct {
	expression expr
}

func (n *outputNode) nodeType() string { return "output" }

// condBranch holds one branch of an if/elif/else chain.
// condition is nil for the else branch.
type condBranch struct {
	condition expr
	body      []node
}

// ifNode represents an if/elif/else chain.
type ifNode struct {
	branches []condBranch
}

func (n *ifNode) nodeType() string { return "if" }

// forNode represents a for loop.
type forNode struct {
	keyVar     string
	valVar     string
	iter       expr
	body       []node
	elseBody   []node
	filterExpr expr
	recursive  bool
}

func (n *forNode) nodeType() string { return "for" }

// setNode represents variable assignment.
type setNode struct {
	target    string
	namespace string
	value     expr
}

func (n *setNode) nodeType() string { return "set" }

// setBlockNode represents a block set assignment: {% set var %}body{% endset %}.
type setBlockNode struct {
	target string
	body   []node
}

func (n *setBlockNode) nodeType() string { return "setBlock" }

// macroParam holds a single macro parameter definition.
type macroParam struct {
	name       string
	defaultVal expr
}

// macroNode represents a macro definition.
type macroNode struct {
	name   string
	params []macroParam
	body   []node

	// acceptsKwargs reports whether the body refers to kwargs. It is
	// found when parsing, not at each definition.
	acceptsKwargs bool
}

func (n *macroNode) nodeType() string { return "macro" }

// callNode represents {% call(args) macro_expr %} body {% endcall %}.
type callNode struct {
	callerArgs []string
	expr       expr
	body       []node
}

func (n *callNode) nodeType() string { return "call" }

// filterBlockNode represents {% filter filterexpr %} body {% endfilter %}.
type filterBlockNode struct {
	filter expr
	body   []node
}

func (n *filterBlockNode) nodeType() string { return "filterBlock" }

// =========================================================================
// Expression nodes
// =========================================================================

// litExpr represents a literal value (string, int, float, bool, none).
type litExpr struct {
	val Value
}

func (n *litExpr) nodeType() string { return "literal" }
func (n *litExpr) exprNode()        {}

// nameExpr represents a variable reference.
type nameExpr struct {
	name string
}

func (n *nameExpr) nodeType() string { return "name" }
func (n *nameExpr) exprNode()        {}

// attrExpr represents attribute access (a.b).
type attrExpr struct {
	obj  expr
	attr string
}

func (n *attrExpr) nodeType() string { return "attr" }
func (n *attrExpr) exprNode()        {}

// itemExpr represents subscript access (a[b]).
type itemExpr struct {
	obj expr
	key expr
}

func (n *itemExpr) nodeType() string { return "item" }
func (n *itemExpr) exprNode()        {}

// sliceExpr represents slice access (a[start:stop:step]).
type sliceExpr struct {
	obj   expr
	start expr
	stop  expr
	step  expr
}

func (n *sliceExpr) nodeType() string { return "slice" }
func (n *sliceExpr) exprNode()        {}

// unaryExpr represents a unary operation (not, -, +).
type unaryExpr struct {
	op      string
	operand expr
}

func (n *unaryExpr) nodeType() string { return "unary" }
func (n *unaryExpr) exprNode()        {}

// binExpr represents a binary operation.
type binExpr struct {
	op    string
	left  expr
	right expr
}

func (n *binExpr) nodeType() string { return "binary" }
func (n *binExpr) exprNode()        {}

// compareExpr evaluates a comparison chain once per operand, short-circuiting.
type compareExpr struct {
	operands []expr
	ops      []string
}

func (n *compareExpr) nodeType() string { return "compare" }
func (n *compareExpr) exprNode()        {}

// condExpr represents an inline ternary (a if cond else b).
type condExpr struct {
	trueExpr  expr
	condition expr
	falseExpr expr
}

func (n *condExpr) nodeType() string { return "condExpr" }
func (n *condExpr) exprNode()        {}

// kwarg holds a single keyword argument.
type kwarg struct {
	name  string
	value expr
}

// callExpr represents a function/method call.
type callExpr struct {
	fn     expr
	args   []expr
	kwargs []kwarg
}

func (n *callExpr) nodeType() string { return "call" }
func (n *callExpr) exprNode()        {}

// filterExpr represents a pipe filter chain (value | filter(args)).
type filterExpr struct {
	expr   expr
	name   string
	args   []expr
	kwargs []kwarg
}

func (n *filterExpr) nodeType() string { return "filter" }
func (n *filterExpr) exprNode()        {}

// testExpr represents an is/is not test (value is testname).
type testExpr struct {
	expr    expr
	name    string
	negated bool
	args    []expr
}

func (n *testExpr) nodeType() string { return "test" }
func (n *testExpr) exprNode()        {}

// listExpr represents an array literal [a, b, c].
type listExpr struct {
	items []expr
	tuple bool
}

func (n *listExpr) nodeType() string { return "list" }
func (n *listExpr) exprNode()        {}

// dictPair holds a single key-value pair in a dict literal.
type dictPair struct {
	key   expr
	value expr
}

// dictExpr represents a dict literal {k: v}.
type dictExpr struct {
	pairs []dictPair
}

func (n *dictExpr) nodeType() string { return "dict" }
func (n *dictExpr) exprNode()        {}

// referencesName finds variable references, including those in inactive branches.
// Literal text, attribute names, and nested macro bodies are not references in
// the enclosing macro's scope.
func referencesName(name string, nodes ...node) bool {
	for _, n := range nodes {
		var children []node
		switch n := n.(type) {
		case *nameExpr:
			if n.name == name {
				return true
			}
		case *outputNode:
			children = append(children, n.expression)
		case *ifNode:
			for _, branch := range n.branches {
				children = append(children, branch.condition)
				children = append(children, branch.body...)
			}
		case *forNode:
			children = append(children, n.iter, n.filterExpr)
			children = append(children, n.body...)
			children = append(children, n.elseBody...)
		case *setNode:
			children = append(children, n.value)
		case *setBlockNode:
			children = append(children, n.body...)
		case *callNode:
			children = append(children, n.expr)
			children = append(children, n.body...)
		case *filterBlockNode:
			children = append(children, n.filter)
			children = append(children, n.body...)
		case *attrExpr:
			children = append(children, n.obj)
		case *itemExpr:
			children = append(children, n.obj, n.key)
		case *sliceExpr:
			children = append(children, n.obj, n.start, n.stop, n.step)
		case *unaryExpr:
			children = append(children, n.operand)
		case *binExpr:
			children = append(children, n.left, n.right)
		case *compareExpr:
			for _, operand := range n.operands {
				children = append(children, operand)
			}
		case *condExpr:
			children = append(children, n.condition, n.trueExpr, n.falseExpr)
		case *callExpr:
			children = append(children, n.fn)
			for _, arg := range n.args {
				children = append(children, arg)
			}
			for _, kw := range n.kwargs {
				children = append(children, kw.value)
			}
		case *filterExpr:
			children = append(children, n.expr)
			for _, arg := range n.args {
				children = append(children, arg)
			}
			for _, kw := range n.kwargs {
				children = append(children, kw.value)
			}
		case *testExpr:
			children = append(children, n.expr)
			for _, arg := range n.args {
				children = append(children, arg)
			}
		case *listExpr:
			for _, item := range n.items {
				children = append(children, item)
			}
		case *dictExpr:
			for _, pair := range n.pairs {
				children = append(children, pair.key, pair.value)
			}
		}
		if referencesName(name, children...) {
			return true
		}
	}
	return false
}

// checkDepth fails if an expression's tree is nested deeper than
// maxDepth. Chains such as a ~ b ~ c or x|f|g are parsed by loops, not
// recursion, so the parser's own depth check does not see them; their
// evaluation (and referencesName) recurses as deep as the tree.
func checkDepth(e expr, maxDepth int) error {
	if exprDepth(e, maxDepth) > maxDepth {
		return &LimitError{Limit: LimitDepth, Value: int64(maxDepth)}
	}
	return nil
}

// exprDepth returns the depth of an expression tree, or some depth above
// limit without looking further once it is deeper than that.
func exprDepth(e expr, limit int) int {
	if e == nil {
		return 0
	}
	if limit < 0 {
		return 1
	}
	deepest := 0
	visit := func(c expr) {
		if c != nil && deepest <= limit {
			deepest = max(deepest, exprDepth(c, limit-1))
		}
	}
	switch n := e.(type) {
	case *attrExpr:
		visit(n.obj)
	case *itemExpr:
		visit(n.obj)
		visit(n.key)
	case *sliceExpr:
		visit(n.obj)
		visit(n.start)
		visit(n.stop)
		visit(n.step)
	case *unaryExpr:
		visit(n.operand)
	case *binExpr:
		visit(n.left)
		visit(n.right)
	case *compareExpr:
		for _, o := range n.operands {
			visit(o)
		}
	case *condExpr:
		visit(n.condition)
		visit(n.trueExpr)
		visit(n.falseExpr)
	case *callExpr:
		visit(n.fn)
		for _, a := range n.args {
			visit(a)
		}
		for _, kw := range n.kwargs {
			visit(kw.value)
		}
	case *filterExpr:
		visit(n.expr)
		for _, a := range n.args {
			visit(a)
		}
		for _, kw := range n.kwargs {
			visit(kw.value)
		}
	case *testExpr:
		visit(n.expr)
		for _, a := range n.args {
			visit(a)
		}
	case *listExpr:
		for _, item := range n.items {
			visit(item)
		}
	case *dictExpr:
		for _, pair := range n.pairs {
			visit(pair.key)
			visit(pair.value)
		}
	}
	return deepest + 1
}
