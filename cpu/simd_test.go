//go:build !js

package cpu

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"wasmllm/cpu/internal/wasmsimd"
	"wasmllm/internal/testkit"
	"wasmllm/loader"
)

// simdRunner is a node script that runs one kernel of the SIMD module on
// a memory image: argv module, image, kernel, then the i32 arguments; it
// writes the image back.
const simdRunner = `
const fs = require("fs");
const [mod, img, name, ...args] = process.argv.slice(1);
const data = fs.readFileSync(img);
const mem = new WebAssembly.Memory({initial: Math.ceil(data.length / 65536) + 1});
new Uint8Array(mem.buffer).set(data);
const inst = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(mod)), {env: {mem}});
inst.exports[name](...args.map(Number));
fs.writeFileSync(img, new Uint8Array(mem.buffer, 0, data.length));
`

// TestSIMDKernels runs every kernel of cpu/internal/wasmsimd in Node.js (V8's
// SIMD128) on seeded random weights, and checks each against the plain-Go
// dot product of the same name bit for bit, and against an f64 dot over
// loader.Dequantize's weights within 1e-5 relative.
func TestSIMDKernels(t *testing.T) {
	node, err := exec.LookPath("node")
	testkit.Need(t, err == nil, "no node: the SIMD kernels run in Node.js here (and in the browser suites, make test-browser)")
	dir := t.TempDir()
	mod := filepath.Join(dir, "simd.wasm")
	if err := os.WriteFile(mod, wasmsimd.Module(), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, K = 5, 96
	for _, dt := range []loader.DType{loader.F32, loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4} {
		wf := make([]float32, rows*K)
		for i := range wf {
			wf[i] = float32(rng.NormFloat64())
		}
		wf[3] = 1e-6 // a subnormal f16 scale somewhere
		lt := &loader.Tensor{Name: "w", Shape: []int{rows, K}, DType: loader.F32, Data: f32Bytes(wf)}
		if dt != loader.F32 {
			lt = simdWeight(t, dt, rows, K, wf)
		}
		w, err := upload(lt)
		if err != nil {
			t.Fatal(err)
		}
		const T = 7
		x := make([]float32, T*K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		// The image: weights, x, out, each 16-aligned.
		wb := w.q
		if dt == loader.F32 {
			wb = f32Bytes(w.f)
		}
		xOff := align16(len(wb))
		outOff := align16(xOff + 4*len(x))
		img := make([]byte, outOff+4*T*rows)
		copy(img, wb)
		copy(img[xOff:], f32Bytes(x))
		var args []int
		switch dt {
		case loader.F32:
			args = []int{0, xOff, outOff, rows, K, T, rows}
		case loader.Q8_0, loader.Q4_0:
			args = []int{0, xOff, outOff, rows, K}
		default:
			args = []int{0, w.scales, xOff, outOff, rows, K}
		}
		name := map[loader.DType]string{loader.F32: wasmsimd.F32, loader.Q8_0: wasmsimd.Q8_0, loader.Q4_0: wasmsimd.Q4_0, loader.Q8: wasmsimd.Q8, loader.Q4: wasmsimd.Q4}[dt]
		imgPath := filepath.Join(dir, "img")
		if err := os.WriteFile(imgPath, img, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := []string{"-e", simdRunner, mod, imgPath, name}
		for _, a := range args {
			b, _ := json.Marshal(a)
			cmd = append(cmd, string(b))
		}
		if out, err := exec.Command(node, cmd...).CombinedOutput(); err != nil {
			t.Fatalf("%v: node: %v\n%s", dt, err, out)
		}
		img, err = os.ReadFile(imgPath)
		if err != nil {
			t.Fatal(err)
		}
		deq := make([]float32, K)
		ts := 1
		if dt == loader.F32 {
			ts = T
		}
		for tk := range ts {
			for r := range rows {
				got := math.Float32frombits(binary.LittleEndian.Uint32(img[outOff+4*(tk*rows+r):]))
				xs := x[tk*K : (tk+1)*K]
				if want := w.dot(r, xs); math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("%v t %d row %d: SIMD %v, Go %v", dt, tk, r, got, want)
				}
				w.row(r, deq)
				var ref, mag float64
				for k := range K {
					ref += float64(deq[k]) * float64(xs[k])
					mag += math.Abs(float64(deq[k]) * float64(xs[k]))
				}
				if math.Abs(float64(got)-ref) > 1e-5*mag {
					t.Errorf("%v t %d row %d: SIMD %v, f64 %v", dt, tk, r, got, ref)
				}
			}
		}
	}
}

func align16(n int) int { return (n + 15) &^ 15 }

func f32Bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
