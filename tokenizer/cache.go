package tokenizer

import (
	"strings"
	"sync"
)

// wordCache memoises the BPE tokens of pre-tokenized words. It is bounded:
// when full it is cleared.
type wordCache struct {
	mu sync.Mutex
	m  map[string][]int32
}

const (
	cacheEntries = 1 << 15
	cacheMaxWord = 256 // bytes; longer words are not cached
)

func (c *wordCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	ids, ok := c.m[w]
	c.mu.Unlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheEntries {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[strings.Clone(w)] = append([]int32(nil), ids...)
	c.mu.Unlock()
}

func (c *wordCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}
