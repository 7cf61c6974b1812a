package gpu

import (
	"errors"
	"testing"

	"lcttop/gpu/cuda"
)

// A device on its side stream numbers the points of its work: a point is
// new only when work was queued since the last, a hold on a point already
// held or on none does nothing, a hold on a point not yet made is refused,
// and the work itself gives the same values as on the default stream.
func TestSideStreamPoints(t *testing.T) {
	d := freshDevice(t)
	if p, err := d.Point(); err != nil || p != 0 || d.SideStream() {
		t.Fatalf("before UseSideStream: point %d (%v), side stream %v; want 0, none", p, err, d.SideStream())
	}
	if err := d.UseSideStream(); err != nil {
		t.Fatal(err)
	}
	if !d.SideStream() {
		t.Fatal("UseSideStream: no side stream")
	}
	if err := d.DelayStreams(1<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	vals := make([]uint16, 70000)
	for i := range vals {
		vals[i] = uint16(0x3c00 + i%512)
	}
	buf, err := d.Alloc(2*len(vals), CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	if err := d.AfterDefault(); err != nil {
		t.Fatal(err)
	}
	if err := d.UploadBF16(buf, vals); err != nil {
		t.Fatal(err)
	}
	p1, err := d.Point()
	if err != nil || p1 == 0 {
		t.Fatalf("first point %d (%v)", p1, err)
	}
	if p, _ := d.Point(); p != p1 {
		t.Errorf("a point with no work queued since: %d, want %d again", p, p1)
	}
	if err := d.HoldDefault(p1 + 1); err == nil {
		t.Error("a hold on a point not yet made was taken")
	}
	for _, p := range []uint64{0, p1, p1} {
		if err := d.HoldDefault(p); err != nil {
			t.Errorf("hold on %d: %v", p, err)
		}
	}
	h, err := d.FullHistogram(buf, len(vals)) // queued on the side stream, read back
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := d.Point(); p2 <= p1 {
		t.Errorf("point after more work %d, not past %d", p2, p1)
	}
	var want [256]uint64
	for _, v := range vals {
		want[(v>>7)&0xFF]++
	}
	if [256]uint64(h) != want {
		t.Error("histogram on the side stream differs from the values'")
	}
}

// A side stream whose events cannot all be made is not half made: the
// device stays on the default stream, and a later UseSideStream builds it
// whole.
func TestUseSideStreamAllOrNothing(t *testing.T) {
	d := freshDevice(t)
	drv, ok := d.drv.(*cudaDriver)
	if !ok {
		t.Skip("needs the driver binding: a GPU or the stand-in driver")
	}
	made := 0
	newCUDAEvent = func(timed bool) (cuda.Event, error) {
		if made++; made == 7 {
			return 0, errors.New("no more events")
		}
		return cuda.NewEvent(timed)
	}
	err := d.UseSideStream()
	newCUDAEvent = cuda.NewEvent
	if err == nil {
		t.Fatal("UseSideStream succeeded with its 7th event failing")
	}
	if d.SideStream() || drv.stream != 0 || drv.side.fromDefault != 0 || len(drv.side.ring) != 0 {
		t.Fatalf("after the failure: side stream %v, stream %#x, %d ring events", d.SideStream(), drv.stream, len(drv.side.ring))
	}
	if err := d.UseSideStream(); err != nil {
		t.Fatal(err)
	}
	if len(drv.side.ring) != sideRing || drv.side.fromDefault == 0 {
		t.Fatalf("%d ring events, want %d", len(drv.side.ring), sideRing)
	}
	buf, err := d.Alloc(1024, CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	if err := d.AfterDefault(); err != nil {
		t.Fatal(err)
	}
	if err := d.Upload(buf, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	p, err := d.Point()
	if err != nil || p == 0 {
		t.Fatalf("point %d (%v)", p, err)
	}
	if err := d.HoldDefault(p); err != nil {
		t.Fatal(err)
	}
}

// Work the device queued on the default stream before UseSideStream is
// done before its work on the side stream starts.
func TestUseSideStreamAfterQueuedWork(t *testing.T) {
	d := freshDevice(t)
	vals := make([]uint16, 50000)
	for i := range vals {
		vals[i] = uint16(0x3c00 + i%700)
	}
	buf, err := d.Alloc(2*len(vals), CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	if err := d.UploadBF16(buf, vals); err != nil { // on the default stream
		t.Fatal(err)
	}
	if err := d.UseSideStream(); err != nil {
		t.Fatal(err)
	}
	h, err := d.FullHistogram(buf, len(vals)) // on the side stream
	if err != nil {
		t.Fatal(err)
	}
	var want [256]uint64
	for _, v := range vals {
		want[(v>>7)&0xFF]++
	}
	if [256]uint64(h) != want {
		t.Error("the side stream's histogram did not see the upload queued before UseSideStream")
	}
}
