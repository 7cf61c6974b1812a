package gpu

// KernelTimes is the device time of the format version 3 kernels of a
// Codec's last Encode and Decode, with TimeKernels on: what the kernels
// take, apart from the transfers and the host's planning around them.
type KernelTimes struct {
	EncodeMs float64 // lct_measure3 and lct_encode3
	DecodeMs float64 // lct_decode3
}

// TimeKernels turns on or off the timing of c's format version 3 kernels
// with device events (lcttop bench); each timed launch waits for the
// device.
func (c *Codec) TimeKernels(on bool) error {
	switch {
	case on && c.kernelTimer == nil:
		t, err := c.dev.NewTimer()
		if err != nil {
			return err
		}
		c.kernelTimer = t
	case !on && c.kernelTimer != nil:
		c.kernelTimer.Close()
		c.kernelTimer = nil
	}
	return nil
}

// KernelTimes is the kernels' time of the last Encode and Decode (zero
// where none ran with TimeKernels on).
func (c *Codec) KernelTimes() KernelTimes { return c.kernelMs }

// launchTimed launches kernel k, adding its device time to *ms when c
// times its kernels. The device is locked by the caller.
func (c *Codec) launchTimed(ms *float64, k kernel, grid, smem int, args ...uint64) error {
	d, t := c.dev, c.kernelTimer
	if t == nil {
		return d.launch(k, grid, threads, smem, args...)
	}
	if err := d.drv.record(t.start); err != nil {
		return err
	}
	if err := d.launch(k, grid, threads, smem, args...); err != nil {
		return err
	}
	if err := d.drv.record(t.end); err != nil {
		return err
	}
	elapsed, err := t.end.since(t.start)
	*ms += elapsed
	return err
}
