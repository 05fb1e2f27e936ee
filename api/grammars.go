package api

import (
	"container/list"
	"crypto/sha256"
	"sync"

	"wasmllm/grammar"
)

// Bounds on the compiled grammars CompileGrammar and CompileConstraint
// keep: how many, and their memory (grammar.Grammar.Bytes: the compiled
// form, and the automaton's tables and token masks, which grow as
// generations use them, each generation of tables up to the matcher's
// bounds). Past either the least recently used go.
const (
	GrammarCacheSize  = 16
	GrammarCacheBytes = 128 << 20
)

// grammars is the process's cache of compiled grammars: the requests of
// every Runner share it, so a schema, regex or tool set that comes again
// reuses its automaton and its masks (a Grammar is safe for concurrent
// use, and its masks are kept per vocabulary).
var grammars = newGrammarLRU(GrammarCacheSize, GrammarCacheBytes)

// CompileGrammar compiles GBNF text, or returns the grammar compiled from
// the same text before, if it is still cached.
func CompileGrammar(gbnf string) (*grammar.Grammar, error) {
	e, err := grammars.get(cacheKey(ConstraintGrammar, gbnf), func() (string, error) { return gbnf, nil })
	if err != nil {
		return nil, err
	}
	return e.g, nil
}

// cacheKey is the cache's key for a source of a kind: the sha256 of both
// (sources may be megabytes).
func cacheKey(kind, source string) [32]byte {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(source))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// grammarLRU is a small least-recently-used cache of compiled grammars,
// bounded in count and bytes.
type grammarLRU struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	order    *list.List // of *grammarEntry, most recent first
	byKey    map[[32]byte]*list.Element
}

type grammarEntry struct {
	key  [32]byte
	gbnf string
	g    *grammar.Grammar
}

func newGrammarLRU(n, bytes int) *grammarLRU {
	return &grammarLRU{max: n, maxBytes: bytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// get returns key's grammar, on a miss compiling the GBNF text that
// frontEnd gives. Errors are not cached.
func (c *grammarLRU) get(key [32]byte, frontEnd func() (string, error)) (*grammarEntry, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		c.trim()
		c.mu.Unlock()
		return el.Value.(*grammarEntry), nil
	}
	c.mu.Unlock()
	// Compile outside the lock: a large grammar takes a while, and two
	// requests compiling the same text at once only do the work twice.
	gbnf, err := frontEnd()
	if err != nil {
		return nil, err
	}
	g, err := grammar.Compile(gbnf)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*grammarEntry), nil
	}
	e := &grammarEntry{key: key, gbnf: gbnf, g: g}
	c.byKey[key] = c.order.PushFront(e)
	c.trim()
	return e, nil
}

// trim drops the least recently used grammars past the bounds, never the
// most recent one. Held c.mu.
func (c *grammarLRU) trim() {
	total := 0
	for el := c.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*grammarEntry)
		total += len(e.gbnf) + e.g.Bytes()
	}
	for c.order.Len() > 1 && (c.order.Len() > c.max || total > c.maxBytes) {
		last := c.order.Back()
		e := last.Value.(*grammarEntry)
		total -= len(e.gbnf) + e.g.Bytes()
		c.order.Remove(last)
		delete(c.byKey, e.key)
	}
}

// len is the number of cached grammars.
func (c *grammarLRU) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
