package gpu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The CUDA driver compiles the kernels' PTX for the GPU when a device
// opens, which takes seconds, and keeps the result in its JIT cache, from
// which later opens load it at once. Where the cache cannot be written,
// every open compiles again, silently: jitCacheNote says so.

// jitCacheNote says why the driver's JIT cache cannot keep the compiled
// kernels, or is "" when it can, judged from the environment the driver
// reads (CUDA_CACHE_DISABLE, CUDA_CACHE_PATH, HOME) without writing.
func jitCacheNote(getenv func(string) string) string {
	const fix = "set CUDA_CACHE_PATH to a writable folder"
	if getenv("CUDA_CACHE_DISABLE") == "1" {
		return "CUDA_CACHE_DISABLE=1: the driver compiles the kernels again at every start, which takes seconds"
	}
	dir := getenv("CUDA_CACHE_PATH")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "no HOME, so no CUDA JIT cache: the driver compiles the kernels again at every start, which takes seconds; " + fix
		}
		dir = filepath.Join(home, ".nv", "ComputeCache")
	}
	if err := writableDir(dir); err != nil {
		return fmt.Sprintf("the CUDA JIT cache %s cannot be written (%v): the driver compiles the kernels again at every start, which takes seconds; %s", dir, err, fix)
	}
	return ""
}

// writableDir reports why dir could not be created or written: it or its
// nearest existing parent must be a folder this process may write.
func writableDir(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && filepath.Dir(p) != p {
			continue
		}
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a folder", p)
		}
		if err := syscall.Access(p, 2|1); err != nil { // W_OK|X_OK
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	}
}

// JITCacheNote says, for a device opened through the driver, why the
// driver could not keep the kernels it compiled at this open (so the next
// open compiles them again), or is "".
func (d *Device) JITCacheNote() string { return d.info.JITNote }
