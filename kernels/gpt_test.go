package kernels

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every kernel the backend launches is an entry of the PTX and a kernel of
// the source, and the PTX has no entry the list forgets.
func TestKernelsListed(t *testing.T) {
	for _, k := range GPTKernels {
		if !strings.Contains(GPTPTX, ".visible .entry "+k+"(") {
			t.Errorf("kernel %s is not an entry of gpt.ptx (run go generate ./kernels)", k)
		}
		if !regexp.MustCompile(`extern "C" __global__ void (__launch_bounds__\([^)]*\) )?` + k + `\(`).MatchString(GPTSource) {
			t.Errorf("kernel %s is not defined in gpt.cu", k)
		}
	}
	listed := map[string]bool{}
	for _, k := range GPTKernels {
		listed[k] = true
	}
	for _, m := range regexp.MustCompile(`\.visible \.entry (\w+)\(`).FindAllStringSubmatch(GPTPTX, -1) {
		if !listed[m[1]] {
			t.Errorf("gpt.ptx has kernel %s, missing from GPTKernels", m[1])
		}
	}
}

// The launch shapes the host uses are the ones the source defines.
func TestLaunchShapesMatchSource(t *testing.T) {
	for name, v := range map[string]int{"LN_THREADS": LayerNormThreads, "LN_ROWS": LayerNormRows, "ATT_THREADS": AttentionThreads, "FA_THREADS": FlashThreads, "FA_TILE": FlashTile} {
		m := regexp.MustCompile(`#define ` + name + ` (\d+)`).FindStringSubmatch(GPTSource)
		if m == nil {
			t.Errorf("gpt.cu does not define %s", name)
			continue
		}
		if m[1] != strconv.Itoa(v) {
			t.Errorf("gpt.cu defines %s %s, the Go constant is %d", name, m[1], v)
		}
	}
}
