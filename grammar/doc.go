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
// EOS is allowed exactly when the grammar may end; when it has ended, EOS
// is the only token.
package grammar
