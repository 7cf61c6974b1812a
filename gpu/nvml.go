//go:build cgo

package gpu

import (
	"fmt"
	"os"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML reads one GPU's status through the driver's NVML library, which it
// loads at run time: it builds and runs without a driver, and then reports
// that none is there.
type NVML struct {
	mu     sync.Mutex
	dev    nvml.Device
	pid    uint32
	closed bool
}

// nvmlUsers counts open NVML values: Init and Shutdown are reference counted
// by the library, but one error path must not shut down another's session.
var nvmlUsers sync.Mutex

// OpenNVML opens the first GPU. Without a driver it returns an error that
// says so ("NVML not found: no NVIDIA driver").
func OpenNVML() (*NVML, error) {
	return openNVML(0)
}

func openNVML(index int) (*NVML, error) {
	nvmlUsers.Lock()
	defer nvmlUsers.Unlock()
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("NVML not found: no NVIDIA driver (libnvidia-ml.so.1 missing)")
		}
		return nil, fmt.Errorf("NVML: init: %s", nvml.ErrorString(ret))
	}
	count, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		nvml.Shutdown()
		return nil, fmt.Errorf("NVML: device count: %s", nvml.ErrorString(ret))
	}
	if index >= count {
		nvml.Shutdown()
		return nil, fmt.Errorf("NVML: no GPU %d (%d present)", index, count)
	}
	dev, ret := nvml.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		nvml.Shutdown()
		return nil, fmt.Errorf("NVML: GPU %d: %s", index, nvml.ErrorString(ret))
	}
	return &NVML{dev: dev, pid: uint32(os.Getpid())}, nil
}

// Status reads the GPU now. Fields NVML cannot read stay zero and are named
// in Err; a closed NVML reports Available false.
func (n *NVML) Status() DeviceStatus {
	if n == nil {
		return DeviceStatus{Err: "NVML not open"}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return DeviceStatus{Err: "NVML closed"}
	}
	s := DeviceStatus{Available: true}
	var missing []string
	note := func(what string, ret nvml.Return) {
		missing = append(missing, what+": "+nvml.ErrorString(ret))
	}
	var ret nvml.Return
	if s.Name, ret = n.dev.GetName(); ret != nvml.SUCCESS {
		note("name", ret)
	}
	if s.Driver, ret = nvml.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		note("driver", ret)
	}
	if mem, ret := n.dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		s.MemUsed, s.MemTotal = mem.Used, mem.Total
	} else {
		note("memory", ret)
	}
	if u, ret := n.dev.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.UtilGPU, s.UtilMem = u.Gpu, u.Memory
	} else {
		note("utilisation", ret)
	}
	if s.ClockSM, ret = n.dev.GetClockInfo(nvml.CLOCK_SM); ret != nvml.SUCCESS {
		note("SM clock", ret)
	}
	if s.ClockMem, ret = n.dev.GetClockInfo(nvml.CLOCK_MEM); ret != nvml.SUCCESS {
		note("memory clock", ret)
	}
	if mw, ret := n.dev.GetPowerUsage(); ret == nvml.SUCCESS {
		s.PowerW = float64(mw) / 1000
	} else {
		note("power", ret)
	}
	if procs, ret := n.dev.GetComputeRunningProcesses(); ret == nvml.SUCCESS {
		for _, p := range procs {
			if p.Pid == n.pid {
				s.ProcessMem += p.UsedGpuMemory
			}
		}
	} else {
		note("processes", ret)
	}
	if len(missing) > 0 {
		s.Err = fmt.Sprint(missing)
	}
	return s
}

// Close ends the NVML session; Status then reports it closed.
func (n *NVML) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	nvmlUsers.Lock()
	defer nvmlUsers.Unlock()
	if ret := nvml.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML: shutdown: %s", nvml.ErrorString(ret))
	}
	return nil
}
