package sampler

import "errors"

var errProcessed = errors.New("processed")

// processedOnly is a row that stops the pipeline before the selection.
type processedOnly struct{ logitRow }

func (processedOnly) best(int) ([]cand, error) { return nil, errProcessed }

// processRow applies the pipeline's processing steps (allowed_token_ids
// through the penalties) to row in place, as a dense row.
func (s *Sampler) processRow(row []float32) error {
	_, err := s.pipeline(processedOnly{s.dense(row)})
	if err == errProcessed {
		return nil
	}
	return err
}
