//go:build !js

// Examples with output need temporary files, which GOOS=js lacks.

package sampler_test

import (
	"fmt"

	"wasmllm/sampler"
)

// An engine's decode loop: the sampler picks tokens, the stop checker
// decides what to show and when to stop.
func Example() {
	vocab := []string{"<eos>", "Hello", ",", " world", "!", " END"}
	p := sampler.DefaultParams()
	p.Temperature = 0 // greedy
	p.Stop = sampler.StringList{" END"}
	p.MaxTokens = 10
	if err := p.Validate(len(vocab)); err != nil {
		panic(err)
	}
	s, err := sampler.New(p, len(vocab), []int32{0}, []int32{1})
	if err != nil {
		panic(err)
	}
	stop := sampler.NewStopChecker(&p, []int32{0})
	// Stand-in for the model: logits that spell "Hello, world! END".
	script := []int32{1, 2, 3, 4, 5, 0}
	for step := 0; ; step++ {
		logits := make([]float32, len(vocab))
		logits[script[step]] = 10
		if !s.NeedsFullRow() {
			// A GPU engine would read back only the top CandidateCount
			// logits here and call s.SampleCandidates(ids, values).
		}
		r, err := s.Sample(logits)
		if err != nil {
			panic(err)
		}
		text, fin := stop.Step(r.ID, vocab[r.ID])
		fmt.Printf("%q ", text)
		if fin.Reason != "" {
			fmt.Printf("-> %s %q\n", fin.Reason, fin.StopString)
			return
		}
	}
	// Output: "Hello" "," " world" "!" "" -> stop " END"
}
