// Package memory draws live and peak bytes by category for the LCT run and
// its uncompressed shadow, the saving, and the GPU's memory from NVML.
package memory

import (
	"fmt"
	"strings"

	"lcttop/session"
	"lcttop/ui/box"
	"lcttop/ui/format"
	"lcttop/ui/msgs"
	"lcttop/ui/styles"
)

// Saving is the fraction of shadow bytes the LCT run does not need:
// 1 - lct/shadow; 0 when the shadow holds nothing.
func Saving(lct, shadow int64) float64 {
	if shadow <= 0 {
		return 0
	}
	return 1 - float64(lct)/float64(shadow)
}

// View draws the panel. dev may be nil before the first NVML poll.
func View(st styles.Styles, s *session.Snapshot, dev *msgs.Device, w, h int) string {
	if h <= 0 {
		return ""
	}
	if s != nil && s.File != nil {
		lines := append([]string{box.Title(st.PanelTitle, st.Separator, "Memory", "file bytes vs LCT bytes", w)}, fileTable(st, s.File, w)...)
		return box.Fit(strings.Join(append(lines, device(st, dev, w)...), "\n"), w, h)
	}
	lines := []string{box.Title(st.PanelTitle, st.Separator, "Memory", "LCT vs shadow", w)}
	if s == nil {
		lines = append(lines, st.Dim.Render("  waiting for the first snapshot"))
	} else {
		lines = append(lines, table(st, s, w)...)
	}
	lines = append(lines, device(st, dev, w)...)
	return box.Fit(strings.Join(lines, "\n"), w, h)
}

func table(st styles.Styles, s *session.Snapshot, w int) []string {
	wide := w >= 72
	var out []string
	head := fmt.Sprintf("%-15s %10s %10s %7s", "category", "LCT peak", "shadow pk", "saved")
	if wide {
		head = fmt.Sprintf("%-15s %10s %10s %10s %10s %7s", "category", "LCT live", "shadow", "LCT peak", "shadow pk", "saved")
	}
	out = append(out, st.TableHead.Render(head))
	row := func(name string, ll, sl, lp, sp int64, total bool) string {
		sv := Saving(lp, sp)
		saved := format.Percent(sv)
		if sp == 0 {
			saved = "—" // nothing to save against: the shadow has none
		}
		var r string
		if wide {
			r = fmt.Sprintf("%-15s %10s %10s %10s %10s %7s", name, format.Bytes(ll), format.Bytes(sl), format.Bytes(lp), format.Bytes(sp), saved)
		} else {
			r = fmt.Sprintf("%-15s %10s %10s %7s", name, format.Bytes(lp), format.Bytes(sp), saved)
		}
		switch {
		case total:
			return st.Value.Bold(true).Render(r)
		case sv < 0:
			return st.Warn.Render(r) // LCT needs more (codec scratch, pool)
		}
		return st.Value.Render(r)
	}
	for _, c := range session.Categories {
		out = append(out, row(c.String(), s.MemLCT.Live[c], s.MemShadow.Live[c], s.MemLCT.Peak[c], s.MemShadow.Peak[c], false))
	}
	out = append(out, row("total", s.MemLCT.LiveTotal, s.MemShadow.LiveTotal, s.MemLCT.PeakTotal, s.MemShadow.PeakTotal, true))
	if s.PeakBytesLCT > 0 || s.PeakBytesShadow > 0 {
		out = append(out, st.Label.Render("step peak ")+st.Value.Render(format.Bytes(s.PeakBytesLCT))+
			st.Label.Render(" vs ")+st.Value.Render(format.Bytes(s.PeakBytesShadow))+
			st.Label.Render(" · saved ")+st.Good.Render(format.Percent(Saving(s.PeakBytesLCT, s.PeakBytesShadow))))
	}
	return out
}

func device(st styles.Styles, d *msgs.Device, w int) []string {
	switch {
	case d == nil:
		return []string{st.Label.Render("GPU  ") + st.Dim.Render("not polled yet")}
	case !d.Available:
		why := d.Err
		if why == "" {
			why = "not available"
		}
		// The reason whole, on as many lines as it takes.
		var out []string
		for i, l := range box.Wrap("none: "+why, max(w-5, 10)) {
			lead := "     "
			if i == 0 {
				lead = "GPU  "
			}
			out = append(out, st.Label.Render(lead)+st.Dim.Render(l))
		}
		return out
	}
	used := float64(d.MemUsed) / float64(max(d.MemTotal, 1))
	barW := max(min(w-50, 20), 5)
	fill := int(used*float64(barW) + 0.5)
	bar := st.Bar.Render(strings.Repeat("█", fill)) + st.Dim.Render(strings.Repeat("░", barW-fill))
	return []string{
		st.Label.Render("GPU  ") + st.Value.Render(d.Name) + st.Dim.Render(" · driver "+d.Driver),
		st.Label.Render("mem  ") + bar + " " + st.Value.Render(format.UBytes(d.MemUsed)+" / "+format.UBytes(d.MemTotal)) +
			st.Label.Render(" · lcttop ") + st.Value.Render(format.UBytes(d.ProcessMem)),
		st.Label.Render("util ") + st.Value.Render(fmt.Sprintf("gpu %d%% mem %d%%", d.UtilGPU, d.UtilMem)) +
			st.Label.Render(" · ") + st.Value.Render(fmt.Sprintf("%d/%d MHz · %.0f W", d.ClockSM, d.ClockMem, d.PowerW)),
	}
}
