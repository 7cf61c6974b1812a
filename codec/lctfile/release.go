package lctfile

import "os"

var pageSize = os.Getpagesize()

// releaseBefore tells the kernel that every byte of a mapped input before
// b's end (b a part of what Next returned) is done with. The pages go in
// runs of at least ioChunk bytes: each drop flushes the TLB of every core
// the process runs on, which costs far more than the pages' faults, so a
// file of small segments must not drop its pages a segment at a time.
// Bytes before b not yet released must be done with too; one goroutine
// calls it. Other inputs release b alone, as Release does.
func (in *Input) releaseBefore(b []byte) {
	if in.m == nil || len(b) == 0 || !inside(in.m, b) {
		in.Release(b)
		return
	}
	end := mappedOffset(in.m, b) + int64(len(b))
	end -= end % int64(pageSize) // the last page may hold bytes still to read
	if end-in.releasedTo < ioChunk {
		return
	}
	dontNeed(in.m, in.m[in.releasedTo:end])
	in.releasedTo = end
}
