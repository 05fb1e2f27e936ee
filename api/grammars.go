package api

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"wasmllm/grammar"
)

// GrammarCacheSize bounds the compiled grammars kept by CompileGrammar.
// Each keeps its automaton's tables and token masks (bounded per grammar by
// package grammar), so this bounds their memory too.
const GrammarCacheSize = 16

// grammars is the process's cache of compiled grammars, by the sha256 of
// their GBNF text (texts may be megabytes): the
// requests of every Runner share it, so a schema, regex or tool set that
// comes again reuses its automaton and its masks (a Grammar is safe for
// concurrent use, and its masks are kept per vocabulary).
var grammars = newGrammarLRU(GrammarCacheSize)

// CompileGrammar compiles GBNF text, or returns the grammar compiled from
// the same text before, if it is still cached.
func CompileGrammar(gbnf string) (*grammar.Grammar, error) {
	return grammars.get(gbnf)
}

// grammarLRU is a small least-recently-used cache of compiled grammars.
type grammarLRU struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *grammarEntry, most recent first
	byKey map[[32]byte]*list.Element
}

type grammarEntry struct {
	key [32]byte
	g   *grammar.Grammar
}

func newGrammarLRU(n int) *grammarLRU {
	return &grammarLRU{max: n, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// get returns src's grammar, compiling it on a miss. Errors are not cached.
func (c *grammarLRU) get(src string) (*grammar.Grammar, error) {
	key := sha256.Sum256([]byte(src))
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*grammarEntry).g, nil
	}
	c.mu.Unlock()
	// Compile outside the lock: a large grammar takes a while, and two
	// requests compiling the same text at once only do the work twice.
	g, err := grammar.Compile(src)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*grammarEntry).g, nil
	}
	c.byKey[key] = c.order.PushFront(&grammarEntry{key: key, g: g})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*grammarEntry).key)
	}
	return g, nil
}

// len is the number of cached grammars.
func (c *grammarLRU) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
