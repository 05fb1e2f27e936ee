//go:build !js

package cpu

// kquantTiles: natively K-quant decode rows keep their Go dot products
// (decodeRows).
const kquantTiles = false
