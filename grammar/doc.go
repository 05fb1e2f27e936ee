// Package grammar is constrained decoding: a grammar (llama.cpp's GBNF
// dialect, or one of the front ends that produce it: JSON Schema, regular
// expressions, choices, tool calls) is compiled to a byte-level pushdown
// automaton, and at each step of generation the set of vocabulary tokens
// that keep the output inside the grammar's language is computed as a
// bitmask over the model's own tokenizer.
//
// Bytes, not characters: character classes are compiled to their UTF-8
// byte sequences, so a token that ends in the middle of a character, or
// spans several grammar symbols, is handled by the same automaton as any
// other. A matcher's state is a set of stacks (the grammar's positions,
// with the rules to return to), interned so that equal states are one
// number; transitions between states are computed once per (state, byte)
// and kept, which makes the automaton a lazily built DFA over the
// pushdown's reachable configurations.
//
// Masks: a token is allowed when the DFA survives all of its bytes. The
// vocabulary is sorted by bytes with each token's common prefix with the
// one before, so one walk over the sorted list visits every shared prefix
// once and skips every token under a dead prefix. The mask of a state
// depends on the state alone (it is context-independent once the stack is
// part of the state), so it is computed once per state and cached, bounded
// by memory; a generation that revisits a state (inside a JSON string, a
// number, a repeated structure) pays one lookup.
//
// This is our form of xgrammar's adaptive token-mask cache: xgrammar
// precomputes, per grammar position, the tokens that do not depend on the
// stack and checks the rest at run time; keying on the whole configuration
// instead makes every cached mask exact and a revisited state cost one
// copy. The cost is on first visits (a few ms natively for a state that
// allows most of a 152k vocabulary; make bench-grammar prints median and
// p99 per step). A grammar's tables are bounded: past 16 MiB (or 2^23
// expansion steps) new matchers start on fresh tables, past 64 MiB (or
// 2^25 steps, or a state of 65,536 stacks) a step that needs a new state
// stops its matcher with a *LimitError, and masks are kept up to 16 MiB.
// So an ambiguous grammar, whose configurations multiply with the text,
// costs bounded memory and time. Left recursion is refused at compile
// time, and so is a repetition of over 16 copies of an item that can match
// the empty text (the most common such grammar); a tail reference does
// not grow a stack.
//
// The front ends bound their inputs and their work (MaxRegexBytes,
// MaxSchemaBytes, a JSON Schema conversion's steps, JSONSchemaGBNFContext's
// context), and their errors quote at most 64 bytes of what they refuse.
//
// EOS is allowed exactly when the grammar may end; when it has ended, EOS
// is the only token.
//
// Fitting a budget (Matcher.MaskWithin, the API's fit_max_tokens): the
// fewest bytes each rule derives are found once per grammar (Knuth's
// generalisation of Dijkstra's algorithm to grammars), then the fewest that
// empty each stack frame and each state as the matcher meets them; a state
// needs that many tokens plus an EOS to end, since every byte is a token of
// its own in the vocabularies read here. With k tokens left, a token is
// allowed only when the state it leaves needs at most k-1, so the reply
// always ends whole within the budget (by induction: the first byte of a
// shortest ending is such a token). A budget that binds is served from a
// mask cached per (state, largest need that fits), so a generation pays one
// extra walk per state and one per distinct bound, not one per step.
//
// A chat model's thinking block stays outside the constraint: WithReasoning
// grafts the block (any text without </think>) before the grammar.
//
// The engine computes the mask on the host before the step's forward pass
// and the backend applies it to the logits in place (model.LogitMasker:
// the CPU backend, and mask_logits.wgsl on WebGPU), before Argmax or TopK,
// so a constrained greedy step still reads back 4 bytes in one submit.
package grammar
