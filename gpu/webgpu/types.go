package webgpu

// Options configures Open.
type Options struct {
	// PowerPreference is passed to requestAdapter; "" means "high-performance".
	PowerPreference string
	// MaxStorageBufferBindingSize and MaxBufferSize, when nonzero, lower the
	// device's limits below what the adapter offers (WebGPU itself never
	// goes below its defaults, so Go enforces them). Tests use this to run
	// the split-tensor paths on any adapter.
	MaxStorageBufferBindingSize uint64
	MaxBufferSize               uint64
	// DisableFeatures leaves these features off even when the adapter has
	// them, e.g. "shader-f16" or "subgroups", to test the fallbacks.
	DisableFeatures []string
}

// Limits are the device limits the backend plans with.
type Limits struct {
	MaxStorageBufferBindingSize       uint64
	MaxBufferSize                     uint64
	MaxUniformBufferBindingSize       uint64
	MaxComputeWorkgroupStorageSize    int
	MaxComputeInvocationsPerWorkgroup int
	MaxComputeWorkgroupSizeX          int
	MaxComputeWorkgroupSizeY          int
	MaxComputeWorkgroupSizeZ          int
	MaxComputeWorkgroupsPerDimension  int
	MaxStorageBuffersPerShaderStage   int
	MaxBindGroups                     int
	MinStorageBufferOffsetAlignment   int
	MinUniformBufferOffsetAlignment   int
}

// Features are the optional WebGPU features the device was created with.
type Features struct {
	Subgroups bool // "subgroups"
	ShaderF16 bool // "shader-f16"
	// SubgroupMinSize and SubgroupMaxSize come from the adapter info; zero
	// when unknown.
	SubgroupMinSize int
	SubgroupMaxSize int
}

// AdapterInfo describes the adapter (GPUAdapterInfo).
type AdapterInfo struct {
	Vendor       string
	Architecture string
	Device       string
	Description  string
	Fallback     bool // a software adapter such as SwiftShader
}

// BufferUsage is a set of GPUBufferUsage flags.
type BufferUsage uint32

// Buffer usages, with WebGPU's values.
const (
	UsageMapRead  BufferUsage = 0x0001
	UsageCopySrc  BufferUsage = 0x0004
	UsageCopyDst  BufferUsage = 0x0008
	UsageUniform  BufferUsage = 0x0040
	UsageStorage  BufferUsage = 0x0080
	UsageIndirect BufferUsage = 0x0100
)

// Stats counts the device's work since Open. Dispatches, Submits and
// Passes are counted by the JavaScript replayer; JSCalls counts every
// crossing from Go into JavaScript made by Run, RunRead, ReadBuffer,
// WriteBuffer and Sync (other calls happen at load time and are not counted).
type Stats struct {
	Dispatches   int64
	Submits      int64
	Passes       int64
	Maps         int64 // buffer maps (readbacks)
	BytesRead    int64 // bytes returned to Go by readbacks
	BytesWritten int64 // bytes written with WriteBuffer and program uploads
	JSCalls      int64
	ProgramRuns  int64
	// Polls are the empty submits that keep Firefox's device polled while a
	// readback waits (see runtime.js); not counted in Submits.
	Polls int64
}

// Sub returns s - t, the work between two snapshots.
func (s Stats) Sub(t Stats) Stats {
	return Stats{
		Dispatches:   s.Dispatches - t.Dispatches,
		Submits:      s.Submits - t.Submits,
		Passes:       s.Passes - t.Passes,
		Maps:         s.Maps - t.Maps,
		BytesRead:    s.BytesRead - t.BytesRead,
		BytesWritten: s.BytesWritten - t.BytesWritten,
		JSCalls:      s.JSCalls - t.JSCalls,
		ProgramRuns:  s.ProgramRuns - t.ProgramRuns,
		Polls:        s.Polls - t.Polls,
	}
}
