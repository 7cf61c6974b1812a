// Command dropordering shows that the GPU suites notice each ordering call
// the GPU codec and the CUDA trainer make between their streams: it drops
// one call at a time (an AfterDefault, a HoldDefault, an event wait, a
// record, a synchronize), builds the gpu and trainer/cudabackend tests with
// the call gone (go test -overlay: the tree is not touched) and runs them
// through the real driver binding on the stand-in driver
// (gpu/internal/fakecuda), whose streams run in a seeded adversarial
// order, until a test fails. It prints, per call, the test that failed and
// the seed, or that none did; it exits non-zero if a call no test notices
// is not listed as one the driver itself makes redundant, or if a call is
// no longer found in its file (the table below is out of date).
//
//	go run ./scripts/dropordering            # every call, seeds 1 2 3
//	go run ./scripts/dropordering -only timed-after-default -v
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// drop is one ordering call and what the code reads without it.
type drop struct {
	name      string
	file, old string // old occurs exactly once in file
	new       string
	why       string // what the call orders
	// redundant says why no test can notice the call gone: the driver
	// gives the same order by itself, or nothing reads what the work it
	// orders writes. Such a drop passing is expected.
	redundant string
}

var drops = []drop{
	// package gpu: the side stream's primitives.
	{name: "after-default", file: "gpu/side.go",
		old: "if err := d.drv.afterDefault(); err != nil {", new: "if err := error(nil); err != nil {",
		why: "Device.AfterDefault: the side stream's later work after the default stream's"},
	{name: "hold-default", file: "gpu/side.go",
		old: "err := d.withContext(func() error { return d.drv.holdDefault(int(p % sideRing)) })",
		new: "err := d.withContext(func() error { return nil })",
		why: "Device.HoldDefault: the default stream's later work after a side-stream point"},
	{name: "side-stream-sync", file: "gpu/side.go",
		old: "if err := d.drv.synchronize(); err != nil {", new: "if err := error(nil); err != nil {",
		why: "UseSideStream: the device's default-stream work done before it moves to the side stream"},
	{name: "section-after-default", file: "gpu/external.go",
		old: "if err := t.dev.drv.afterDefault(); err != nil {", new: "if err := error(nil); err != nil {",
		why: "a tensor's section from the caller's allocator: used after the default stream's last use"},
	{name: "driver-wait-default", file: "gpu/driver_cuda.go",
		old: "return d.stream.Wait(d.side.fromDefault)", new: "return nil",
		why: "cudaDriver.afterDefault: the side stream's wait on the default stream's event"},
	{name: "driver-record-side", file: "gpu/driver_cuda.go",
		old: "func (d *cudaDriver) markSide(i int) error { return d.side.ring[i].Record(d.stream) }",
		new: "func (d *cudaDriver) markSide(i int) error { return nil }",
		why: "cudaDriver.markSide: a side-stream point's event record"},
	{name: "driver-wait-side", file: "gpu/driver_cuda.go",
		old: "func (d *cudaDriver) holdDefault(i int) error { return d.main.h.Wait(d.side.ring[i]) }",
		new: "func (d *cudaDriver) holdDefault(i int) error { return nil }",
		why: "cudaDriver.holdDefault: the default stream's wait on a side-stream point"},
	{name: "download-sync", file: "gpu/driver_cuda.go",
		old: "\t\treturn err\n\t}\n\treturn s.h.Synchronize()\n}", new: "\t\treturn err\n\t}\n\treturn nil\n}",
		why:       "cudaStream.dtoh: the wait after the queued download",
		redundant: "a download into pageable memory returns once it is done (cuMemcpyDtoHAsync)"},
	{name: "status-read-wait", file: "gpu/status_async.go",
		old: "if err := r.ev.wait(); err != nil {", new: "if err := error(nil); err != nil {",
		why: "StatusRead.Wait: the host reads the pinned status words after their copy's event"},
	{name: "status-release-wait", file: "gpu/status_async.go",
		old: "err = r.ev.wait()", new: "err = nil",
		why: "StatusRead.Release: the pinned memory is reused after the copy into it",
		redundant: "the next read into the same pinned memory is queued on the same stream, behind the first's copy " +
			"(UseSideStream synchronizes before the stream changes), and freeing pinned memory waits for the device"},
	{name: "timer-wait", file: "gpu/driver_cuda.go",
		old: "\tif err := e.ev.Synchronize(); err != nil {\n\t\treturn 0, err\n\t}\n\tms, err := cuda.Elapsed(start.(*cudaEvent).ev, e.ev)",
		new: "\tms, err := cuda.Elapsed(start.(*cudaEvent).ev, e.ev)",
		why: "Timer.Ms and Compute.Millis: the end event waited for before it is read"},

	// package gpu/lct: the GPU codec.
	{name: "codec-timed-after-default", file: "gpu/lct/figures.go",
		old: "func (c *Codec) timed(op string, gs []*Tensor, run func() error) error {\n\tif err := c.dev.AfterDefault(); err != nil {",
		new: "func (c *Codec) timed(op string, gs []*Tensor, run func() error) error {\n\tif err := error(nil); err != nil {",
		why: "every codec operation (encode, decode, encode again) after the trainer's work on its inputs"},
	{name: "codec-sample-after-default", file: "gpu/lct/codec.go",
		old: "\tif err := c.dev.AfterDefault(); err != nil {\n\t\treturn nil, err\n\t}\n\tsample, err",
		new: "\tsample, err",
		why: "a key's first fit: the sample histogram after the trainer wrote the values"},
	{name: "codec-arena-after-default", file: "gpu/lct/arena.go",
		old: "\t\tif err := dev.AfterDefault(); err != nil {\n\t\t\tmem.Free(p)", new: "\t\tif err := error(nil); err != nil {\n\t\t\tmem.Free(p)",
		why: "the histogram arena's new block after the default stream's last use of it"},
	{name: "codec-ready-hold", file: "gpu/lct/codec.go",
		old: "\tdelete(c.decoded, p)\n\treturn c.dev.HoldDefault(pt)", new: "\tdelete(c.decoded, p)\n\t_ = pt\n\treturn nil",
		why: "Codec.Ready: the trainer's use of a decoded view after its decode"},
	{name: "codec-pool-hold", file: "gpu/lct/codec.go",
		old: "func (c *Codec) Hold(point uint64) error { return c.dev.HoldDefault(point) }",
		new: "func (c *Codec) Hold(point uint64) error { return nil }",
		why: "Codec.Hold: a pooled block the side stream used, reused by the default stream after that use"},
	{name: "codec-settle-wait", file: "gpu/lct/window.go",
		old: "\terr := w.read.Wait()\n",
		new: "\tvar err error\n",
		why: "SettleWindow: the window's status words and histograms read after their copy"},

	// package trainer/cudabackend: the LCT store, the pool, the copy stream.
	{name: "store-ready", file: "trainer/cudabackend/lctstore.go",
		old: "func (st *lctStore) ready(p gpu.Ptr) error { return st.codec.Ready(p) }",
		new: "func (st *lctStore) ready(p gpu.Ptr) error { return nil }",
		why: "the LCT store's use of a decoded view after its decode"},
	{name: "pool-fence", file: "trainer/cudabackend/pool.go",
		old: "\t\tif err := p.fence.Hold(b.side); err != nil {", new: "\t\tif err := error(nil); err != nil {",
		why: "devicePool.get: a block the side stream used, handed to the default stream after that use"},
	{name: "pool-fence-set", file: "trainer/cudabackend/backend.go",
		old: "\t\tif c.OnDevice() {\n\t\t\tpool.SetFence(c)\n\t\t}", new: "",
		why: "the run's pool given the codec's fence"},
	{name: "pool-trim-sync", file: "trainer/cudabackend/pool.go",
		old: "\t\t\tif err := p.dev.Sync(); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n", new: "",
		why:       "devicePool.trim: the side stream's work done before its blocks are freed",
		redundant: "cuMemFree waits for the device's work itself"},
	{name: "copy-stream-after-default", file: "trainer/cudabackend/copystream.go",
		old: "if err := g.d.AfterDefault(); err != nil {", new: "if err := error(nil); err != nil {",
		why: "the copy floor's copy beside the trainer after the trainer wrote its source",
		redundant: "the copy only reads the trainer's values into the floor's sink, which nothing reads: " +
			"the wait makes the floor wait where the codec would, for its timing"},
	{name: "copy-stream-hold", file: "trainer/cudabackend/copystream.go",
		old: "func (g gpuCopyStream) Hold(point uint64) error { return g.d.HoldDefault(point) }",
		new: "func (g gpuCopyStream) Hold(point uint64) error { return nil }",
		why: "the copy floor's views used by the trainer after their copy"},

	// The side-stream points the codec records as a block's last use, from
	// which the pool's fence (pool-fence) holds the default stream: dropping
	// one hands a block over before the codec is done.
	{name: "point-encode-source", file: "gpu/lct/queue.go",
		old: "\t\tq.g.mem.Touch(q.at, pt)\n", new: "",
		why: "flush: an encode batch's sources used by the side stream up to its point"},
	{name: "point-sections-freed", file: "gpu/lct/memory.go",
		old: "\ta.mem.Touch(p, point)\n", new: "",
		why: "sections.FreeAfter: a tensor's sections given back at the side stream's point"},
	{name: "point-used-with", file: "gpu/lct/codec.go",
		old: "\tfor _, p := range ps {\n\t\tg.mem.Touch(p, pt)\n\t}", new: "",
		why: "usedWith: the source of an encode made again used by the side stream up to its point"},
	{name: "point-decoded-view", file: "gpu/lct/codec.go",
		old: "\t\tg.mem.Touch(p, pt)\n\t\tc.decoded[p] = pt", new: "\t\tc.decoded[p] = pt",
		why: "decodedInto: a decode's view written by the side stream up to its point"},
	{name: "point-arena", file: "gpu/lct/arena.go",
		old: "\t\t\tmem.Touch(a.buf, pt)\n", new: "\t\t\t_ = pt\n",
		why: "the histogram arena's old block read by the side stream's copy up to its point"},
	{name: "point-free-tag", file: "gpu/lct/memory.go",
		old: "\ta.tag = point\n", new: "",
		why: "sections.freeAfter: a compressed tensor's blocks given back as used up to its last point"},
}

// packages are what a drop is tested by, in order (gpu's suite is quick),
// each importing those before it: a drop in one is tested by it and those
// after it.
var packages = []string{"gpu", "gpu/lct", "trainer/cudabackend"}

// skip are tests whose work is on one stream only, skipped to save time.
const skip = "TestDenseRunTracksCPUTrainer|TestAttentionMatchesCPU|TestLayerNormMatchesCPU|TestEncodeAllPatterns"

func main() {
	only := flag.String("only", "", "drop only the calls named (comma-separated)")
	seeds := flag.String("seeds", "1,2,3", "stand-in stream seeds to try, in order")
	lib := flag.String("lib", "", "folder of a built stand-in (gpu/internal/fakecuda/build.sh); default: build one")
	verbose := flag.Bool("v", false, "print each run's failures")
	pkgs := flag.String("packages", strings.Join(packages, ","), "the test packages to run, in order")
	flag.Parse()
	packages = strings.Split(*pkgs, ",")
	if err := run(*only, strings.Split(*seeds, ","), *lib, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "dropordering:", err)
		os.Exit(1)
	}
}

func run(only string, seeds []string, lib string, verbose bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "gpu/internal/fakecuda/build.sh")); err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	work, err := os.MkdirTemp("", "dropordering-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if lib == "" {
		lib = filepath.Join(work, "lib")
		if out, err := exec.Command("bash", "gpu/internal/fakecuda/build.sh", lib).CombinedOutput(); err != nil {
			return fmt.Errorf("building the stand-in: %v\n%s", err, out)
		}
	}
	lib, _ = filepath.Abs(lib)
	env := append(os.Environ(), "LD_LIBRARY_PATH="+lib, "LCTTOP_CUBLAS="+filepath.Join(lib, "libcublas.so.12"),
		"LCTTOP_REQUIRE_GPU=1", "LCTTOP_EMULATE=")
	var bad []string
	for _, d := range drops {
		if only != "" && !contains(strings.Split(only, ","), d.name) {
			continue
		}
		t0 := time.Now()
		caught, seed, err := try(root, work, env, d, seeds, verbose)
		el := time.Since(t0).Round(time.Second)
		switch {
		case err != nil:
			fmt.Printf("%-30s ERROR %v\n", d.name, err)
			bad = append(bad, d.name)
		case caught != "":
			fmt.Printf("%-30s caught by %s (seed %s, %v)\n", d.name, caught, seed, el)
		case d.redundant != "":
			fmt.Printf("%-30s not noticed, as expected: %s (%v)\n", d.name, d.redundant, el)
		default:
			fmt.Printf("%-30s NOT NOTICED by any test under seeds %s (%v): %s\n", d.name, strings.Join(seeds, " "), el, d.why)
			bad = append(bad, d.name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d calls not shown to matter: %s", len(bad), strings.Join(bad, ", "))
	}
	return nil
}

var (
	failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	runLine  = regexp.MustCompile(`(?m)^=== RUN\s+(\S+)`)
)

// try builds the tests with d's call dropped and runs them under each seed
// until one fails; it returns the failing package and test, and the seed.
func try(root, work string, env []string, d drop, seeds []string, verbose bool) (caught, seed string, err error) {
	src, err := os.ReadFile(filepath.Join(root, d.file))
	if err != nil {
		return "", "", err
	}
	if n := bytes.Count(src, []byte(d.old)); n != 1 {
		return "", "", fmt.Errorf("the call is in %s %d times, not once: the table is out of date", d.file, n)
	}
	mutated := filepath.Join(work, d.name+".go")
	if err := os.WriteFile(mutated, bytes.Replace(src, []byte(d.old), []byte(d.new), 1), 0o644); err != nil {
		return "", "", err
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, d.file): mutated}})
	ov := filepath.Join(work, d.name+".json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		return "", "", err
	}
	for i, pkg := range packages {
		if i < slices.Index(packages, filepath.Dir(d.file)) {
			continue // cannot reach the drop's package
		}
		bin := filepath.Join(work, filepath.Base(pkg)+".test")
		build := exec.Command("go", "test", "-c", "-overlay", ov, "-o", bin, "./"+pkg)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("building %s without the call: %v\n%s", pkg, err, out)
		}
		for _, s := range seeds {
			cmd := exec.Command(bin, "-test.v", "-test.failfast", "-test.timeout", "10m", "-test.skip", skip)
			cmd.Dir = filepath.Join(root, pkg)
			cmd.Env = append(env, "LCTTOP_FAKECUDA_SEED="+s)
			out, err := cmd.CombinedOutput()
			if err == nil {
				continue
			}
			if verbose {
				os.Stdout.Write(tail(out, 40))
			}
			name := "a crash"
			if m := failLine.FindSubmatch(out); m != nil {
				name = string(m[1])
			} else if m := runLine.FindAllSubmatch(out, -1); m != nil {
				name = "a crash in " + string(m[len(m)-1][1])
			}
			return pkg + " " + name, s, nil
		}
	}
	return "", "", nil
}

func tail(b []byte, lines int) []byte {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if lines--; lines == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
