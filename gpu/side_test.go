package gpu

import "testing"

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
