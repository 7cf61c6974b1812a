package lct

import "testing"

// The overflow room follows a spill up at once and down slowly.
func TestOverflowRoom(t *testing.T) {
	room := overflowRoom(0, 8000)
	if room != 8000+1000+1024 {
		t.Fatalf("first room %d, want the need, an eighth and 1 KiB", room)
	}
	// A spill that moves between 6,000 and 8,000 bytes keeps room for 8,000.
	for i := range 6 {
		room = overflowRoom(room, []int{6000, 8000}[i%2])
		if room < 8000 {
			t.Fatalf("after %d encodes the room is %d, below the recent largest spill", i+1, room)
		}
	}
	// A spill that stops shrinks its room to what it needs now.
	for range 60 {
		room = overflowRoom(room, 100)
	}
	if want := 100 + 100/8 + 1024; room != want {
		t.Errorf("room %d after a long quiet spell, want %d", room, want)
	}
	// A larger spill takes its room at once.
	if room = overflowRoom(room, 50000); room != 50000+50000/8+1024 {
		t.Errorf("room %d after a spill of 50,000 bytes", room)
	}
}
