package gpu

// DeviceStatus is one reading of the GPU through NVML.
type DeviceStatus struct {
	Available bool   // NVML answered; when false, Err says why
	Err       string // why the reading is missing or partial
	Name      string
	Driver    string
	MemUsed   uint64 // bytes in use on the device, every process
	MemTotal  uint64 // bytes
	// ProcessMem is this process's device memory, bytes (0 where NVML
	// does not say, as inside some containers).
	ProcessMem       uint64
	UtilGPU, UtilMem uint32 // percent over NVML's last sample period
	ClockSM          uint32 // MHz
	ClockMem         uint32 // MHz
	PowerW           float64
}
