package filesource

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"lcttop/codec/lctfile"
	"lcttop/codec/torchfile"
	"lcttop/session"
)

// found is a complete checkpoint in a watched folder.
type found struct {
	step  int
	path  string   // the sub-folder, or the step's first file
	files []string // every file of it: a folder's, or the ranks' of one step
}

var (
	// stepWord finds the step where a name says it: step_100, iter-100,
	// checkpoint-100, global_step100, ckpt100.
	stepWord = regexp.MustCompile(`(?i)(?:global_step|step|iter|iteration|checkpoint|ckpt)[-_]?(\d+)`)
	// shardOf finds "rank 3 of 8" and "00003-of-00008": which file of a
	// step's set this is, and how many there are.
	shardOf = regexp.MustCompile(`(?i)(?:rank[-_]?)?(\d+)[-_]of[-_](\d+)`)
	// rankWord is a rank without a count, which says nothing of the step.
	rankWord = regexp.MustCompile(`(?i)rank[-_]?\d+`)
	digits   = regexp.MustCompile(`\d+`)
)

// stepOf reads the step from a checkpoint's name: where a word marks it,
// else the last number that is not a rank or a shard count.
func stepOf(name string) (int, bool) {
	for _, ext := range []string{".safetensors", ".lct"} {
		name = strings.TrimSuffix(name, ext)
	}
	if m := stepWord.FindStringSubmatch(name); m != nil {
		n, err := strconv.Atoi(m[1])
		return n, err == nil
	}
	name = shardOf.ReplaceAllString(name, " ")
	name = rankWord.ReplaceAllString(name, " ")
	all := digits.FindAllString(name, -1)
	if len(all) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(all[len(all)-1])
	return n, err == nil
}

// scanFolder lists the complete checkpoints of dir, oldest step first: its
// sub-folders and files whose names carry a step. A sub-folder counts once
// its Hugging Face index is there with every shard it names, or, without
// an index, once every file in it is whole; the files of one step (ranks,
// shards) count once all of a set ("-of-N") are there and whole (fileCheck;
// stable is kept for callers and unused). A step file that never became
// whole is returned in skipped, with why. Hidden and temporary names are
// skipped.
func scanFolder(dir string, stable map[string]int64) ([]found, []session.SkippedFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot read: %w", dir, pathReason(err))
	}
	var skipped []session.SkippedFile
	type group struct {
		files []string
		want  int // files the names promise (0: not said)
		whole bool
	}
	byStep := map[int]*group{}
	var out []found
	for _, e := range entries {
		name := e.Name()
		if hidden(name) {
			continue
		}
		step, ok := stepOf(name)
		if !ok {
			continue
		}
		path := filepath.Join(dir, name)
		if e.IsDir() {
			if files, ok := folderComplete(path, stable); ok {
				out = append(out, found{step: step, path: path, files: files})
			}
			continue
		}
		if !isCheckpointFile(name) {
			continue
		}
		g := byStep[step]
		if g == nil {
			g = &group{whole: true}
			byStep[step] = g
		}
		g.files = append(g.files, path)
		whole, problem := fileCheck(path, stable)
		g.whole = g.whole && whole
		if problem != "" {
			skipped = append(skipped, session.SkippedFile{Path: path, Reason: problem})
		}
		if m := shardOf.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[2])
			g.want = max(g.want, n)
		}
	}
	for step, g := range byStep {
		if !g.whole || g.want > 0 && len(g.files) < g.want {
			continue
		}
		slices.Sort(g.files)
		out = append(out, found{step: step, path: g.files[0], files: g.files})
	}
	slices.SortFunc(out, func(a, b found) int { return a.step - b.step })
	return out, skipped, nil
}

// folderComplete reports whether a checkpoint folder is complete, and its files.
func folderComplete(dir string, stable map[string]int64) ([]string, bool) {
	if torchfile.IsFolder(dir) { // its .metadata is renamed into place last
		return []string{dir}, true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if hidden(name) {
			return nil, false // a writer is still at work in it
		}
		if strings.HasSuffix(name, hfIndexSuffix) {
			shards, err := indexFiles(filepath.Join(dir, name))
			if err != nil {
				return nil, false
			}
			for _, f := range shards {
				if !fileWhole(f, stable) {
					return nil, false
				}
			}
			return shards, true
		}
		if isCheckpointFile(name) {
			files = append(files, filepath.Join(dir, name))
		}
	}
	if len(files) == 0 {
		return nil, false
	}
	for _, f := range files {
		if !fileWhole(f, stable) {
			return nil, false
		}
	}
	return files, true
}

// lctSettle is how long a file that is not whole must go unmodified before
// watch says what is wrong with it: until then a writer may be at work.
const lctSettle = 2 * time.Second

// fileWhole reports whether a file holds all it should (fileCheck).
func fileWhole(path string, stable map[string]int64) bool {
	whole, _ := fileCheck(path, stable)
	return whole
}

// fileCheck reports whether a file holds all it should: a safetensors file
// every byte its header's offsets reach; a torch.save file a zip whose
// directory, written last, is there; an .lct file the size its fields add
// up to. It reads headers and fields, never the data. A file that is not
// whole and has not changed for lctSettle is no file being written: problem
// says what is wrong with it.
func fileCheck(path string, stable map[string]int64) (whole bool, problem string) {
	f, err := os.Open(path)
	if err != nil {
		return false, pathReason(err).Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, pathReason(err).Error()
	}
	settled := time.Since(fi.ModTime()) > lctSettle
	bad := func(format string, args ...any) (bool, string) {
		if !settled {
			return false, ""
		}
		return false, fmt.Sprintf(format, args...)
	}
	if fi.Size() < 8 {
		return bad("%d bytes: too short for a checkpoint", fi.Size())
	}
	if strings.HasSuffix(path, ".lct") {
		end, err := lctfile.ArchiveSize(f, fi.Size())
		switch {
		case err != nil:
			return bad("%v", err)
		case end != fi.Size():
			return bad("%d bytes follow its last segment's trailing CRC", fi.Size()-end)
		}
		return true, ""
	}
	var head [16]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return bad("cannot read: %v", err)
	}
	if torchfile.IsTorchSave(head[:]) {
		if _, err := zip.NewReader(f, fi.Size()); err != nil {
			return bad("a torch.save file without its zip directory (truncated?): %v", err)
		}
		return true, ""
	}
	n := binary.LittleEndian.Uint64(head[:8])
	if n > uint64(fi.Size()-8) || n > 100<<20 {
		return bad("not a safetensors file or truncated: header length %d but %d bytes follow", n, fi.Size()-8)
	}
	header := make([]byte, n)
	if _, err := f.ReadAt(header, 8); err != nil {
		return bad("cannot read its header: %v", err)
	}
	end, ok := headerEnd(header)
	if !ok {
		return bad("not a safetensors file: its header is not JSON naming tensors")
	}
	if have := fi.Size() - 8 - int64(n); have != end {
		return bad("truncated: its header names %d bytes of data, the file holds %d", end, have)
	}
	return true, ""
}

// Watch follows dir, a folder a training job writes checkpoints into, and
// shows its newest complete checkpoint, exactly coded as Open does; every
// checkpoint it has seen becomes a point of history (its ratios by class
// and by tensor, and each tensor's exponent drift from the one before).
// Checkpoints that were already there, or that a newer one overtook before
// its exact pass ended, are measured from their samples. It only reads:
// the job is never made to wait, and a file is read only once complete.
func Watch(dir string, opt Options) (*Session, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", dir, pathReason(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a folder (lcttop open shows a single checkpoint)", dir)
	}
	s := newSession("watch", dir, opt)
	s.mu.Lock()
	snap := s.snapshotLocked()
	s.last = time.Now()
	s.mu.Unlock()
	s.send(snap)
	s.startWorkers()
	s.watchWG.Add(1)
	go s.watchLoop(dir)
	return s, nil
}

// watchLoop reads the folder every Interval until Stop.
func (s *Session) watchLoop(dir string) {
	defer s.watchWG.Done()
	every := s.opt.Interval
	if every <= 0 {
		every = time.Second
	}
	stable := map[string]int64{}
	seen := map[int]bool{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	first := true
	for {
		s.scanOnce(dir, stable, seen)
		if first {
			first = false
			close(s.scanned)
			if s.opt.Once {
				return
			}
		}
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// scanOnce shows the newest new checkpoint and measures the others from
// their samples.
func (s *Session) scanOnce(dir string, stable map[string]int64, seen map[int]bool) {
	all, skipped, err := scanFolder(dir, stable)
	if err != nil {
		s.setNotice(err.Error())
		return
	}
	for _, sk := range skipped {
		s.skip(sk.Path, sk.Reason)
	}
	var fresh []found
	for _, f := range all {
		if !seen[f.step] {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if s.opt.Once {
		// Every checkpoint measured the same way, exactly, oldest first:
		// figures and drifts compare like with like.
		for _, f := range fresh {
			seen[f.step] = true
			if err := s.show(f); err != nil {
				if !errors.Is(err, errStopped) {
					s.skip(f.path, reasonOf(err, f.path))
				}
				continue
			}
			if !s.waitExact(f.step) {
				return
			}
		}
		return
	}
	newest := fresh[len(fresh)-1]
	s.mu.Lock()
	shownStep := -1
	if s.view != nil {
		shownStep = s.view.ck.step
	}
	s.mu.Unlock()
	order := fresh
	if newest.step > shownStep {
		// The newest goes up first; the rest fill in the history after.
		seen[newest.step] = true
		if err := s.show(newest); err != nil && !errors.Is(err, errStopped) {
			s.skip(newest.path, reasonOf(err, newest.path))
		}
		order = fresh[:len(fresh)-1]
	}
	for i := len(order) - 1; i >= 0; i-- {
		select {
		case <-s.stop:
			return
		default:
		}
		f := order[i]
		seen[f.step] = true
		if err := s.sampleOnly(f); err != nil && !errors.Is(err, errStopped) {
			s.skip(f.path, reasonOf(err, f.path))
		}
	}
}

// waitExact waits until the checkpoint of step is shown with its exact
// figures; false once the session stops.
func (s *Session) waitExact(step int) bool {
	for {
		s.mu.Lock()
		done := s.view != nil && s.view.ck.step == step && s.view.progress().Done()
		s.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-s.stop:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// show makes f the checkpoint shown; the one before leaves its point in
// the history as it stood.
func (s *Session) show(f found) error {
	ck, err := openCheckpoint(f.path, f.files, f.step)
	if err != nil {
		return err
	}
	v, err := s.newView(ck)
	if err != nil {
		ck.close()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		ck.close()
		return nil
	}
	if old := s.view; old != nil && !old.pointed {
		s.hist.put(pointOf(old)) // overtaken: its figures as far as the pass got
	}
	s.setViewLocked(v)
	s.changedLocked()
	return nil
}

// sampleOnly adds a checkpoint's point to the history from its samples.
func (s *Session) sampleOnly(f found) error {
	ck, err := openCheckpoint(f.path, f.files, f.step)
	if err != nil {
		return err
	}
	defer ck.close()
	v, err := s.newView(ck)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hist.put(pointOf(v))
	s.changedLocked()
	return nil
}

// skip records a file of the folder left out and why; the notice says the
// newest.
func (s *Session) skip(path, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.skipped == nil {
		s.skipped = map[string]string{}
	}
	if s.skipped[path] == reason {
		return
	}
	s.skipped[path] = reason
	s.notice = fmt.Sprintf("skipped %s: %s", filepath.Base(path), reason)
	s.changedLocked()
}

// skippedLocked lists the files skipped, by name; mu is held.
func (s *Session) skippedLocked() []session.SkippedFile {
	var out []session.SkippedFile
	for p, r := range s.skipped {
		out = append(out, session.SkippedFile{Path: p, Reason: r})
	}
	slices.SortFunc(out, func(a, b session.SkippedFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func (s *Session) setNotice(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notice != msg {
		s.notice = msg
		s.changedLocked()
	}
}

// headerEnd is the largest data offset a safetensors header names: where
// the file's data ends.
func headerEnd(header []byte) (int64, bool) {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(header, &entries); err != nil {
		return 0, false
	}
	var end int64
	for name, raw := range entries {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DataOffsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || len(e.DataOffsets) != 2 {
			return 0, false
		}
		end = max(end, e.DataOffsets[1])
	}
	return end, true
}
