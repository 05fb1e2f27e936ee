//go:build js

package gpu

import "wasmllm/model"

// CheckLayers implements model.LayerChecker (CheckConfig).
func (b *Backend) CheckLayers(c *model.Config) error { return CheckConfig(c) }
