// Command gencheckpoint writes a large synthetic checkpoint (a safetensors
// file of LLaMA-shaped BF16 weights, some Adam states and F32 norms) to
// measure lcttop open on: how soon its table shows, how long the exact pass
// takes, and how much memory it holds (docs/perf.md).
//
//	go run ./scripts/gencheckpoint -gib 4.5 -out /tmp/big/model.safetensors
//
// Values are Gaussian BF16 drawn once into a pool and read at a different
// offset and scale for each tensor, so writing gigabytes takes seconds. The
// file is written to a temporary name and renamed into place.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"lcttop/codec/safetensors"
)

func main() {
	gib := flag.Float64("gib", 4.5, "size of the checkpoint in GiB (at least the layers it takes to reach it)")
	out := flag.String("out", "", "the .safetensors file to write")
	dim := flag.Int("dim", 4096, "hidden size")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gencheckpoint: -out is required")
		os.Exit(2)
	}
	if err := write(*out, *gib, *dim); err != nil {
		fmt.Fprintln(os.Stderr, "gencheckpoint:", err)
		os.Exit(1)
	}
}

type spec struct {
	name  string
	dtype string
	shape []int64
	sigma float64 // BF16 values: deviation; squared when square is set
	sq    bool
}

func (s spec) elems() int64 {
	n := int64(1)
	for _, d := range s.shape {
		n *= d
	}
	return n
}

func layout(gib float64, dim int) []spec {
	d, ff := int64(dim), int64(dim)*11008/4096
	specs := []spec{{name: "model.embed_tokens.weight", dtype: "BF16", shape: []int64{32000, d}, sigma: 0.02}}
	var bytes int64 = 32000 * d * 2
	for l := 0; float64(bytes) < gib*(1<<30); l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		layer := []spec{
			{name: p + "self_attn.q_proj.weight", dtype: "BF16", shape: []int64{d, d}, sigma: 0.02},
			{name: p + "self_attn.k_proj.weight", dtype: "BF16", shape: []int64{d, d}, sigma: 0.02},
			{name: p + "self_attn.v_proj.weight", dtype: "BF16", shape: []int64{d, d}, sigma: 0.015},
			{name: p + "self_attn.o_proj.weight", dtype: "BF16", shape: []int64{d, d}, sigma: 0.01},
			{name: p + "mlp.gate_proj.weight", dtype: "BF16", shape: []int64{ff, d}, sigma: 0.02},
			{name: p + "mlp.up_proj.weight", dtype: "BF16", shape: []int64{ff, d}, sigma: 0.02},
			{name: p + "mlp.down_proj.weight", dtype: "BF16", shape: []int64{d, ff}, sigma: 0.01},
			{name: p + "input_layernorm.weight", dtype: "F32", shape: []int64{d}},
			{name: p + "post_attention_layernorm.weight", dtype: "F32", shape: []int64{d}},
		}
		if l%4 == 1 { // some optimizer states, as a training checkpoint holds
			layer = append(layer,
				spec{name: "optimizer.exp_avg." + p + "mlp.up_proj.weight", dtype: "BF16", shape: []int64{ff, d}, sigma: 1e-4},
				spec{name: "optimizer.exp_avg_sq." + p + "mlp.up_proj.weight", dtype: "BF16", shape: []int64{ff, d}, sigma: 1e-3, sq: true})
		}
		for _, s := range layer {
			bytes += s.elems() * safetensors.DTypeSize[s.dtype]
		}
		specs = append(specs, layer...)
	}
	return specs
}

func write(path string, gib float64, dim int) error {
	specs := layout(gib, dim)
	// safetensors.Encode takes the data whole: the header is written here
	// and the data streamed after it.
	header := "{"
	var off int64
	for i, s := range specs {
		n := s.elems() * safetensors.DTypeSize[s.dtype]
		if i > 0 {
			header += ","
		}
		shape := ""
		for j, x := range s.shape {
			if j > 0 {
				shape += ","
			}
			shape += fmt.Sprint(x)
		}
		header += fmt.Sprintf(`%q:{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`, s.name, s.dtype, shape, off, off+n)
		off += n
	}
	header += "}"
	for len(header)%8 != 0 {
		header += " "
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 4<<20)
	binary.Write(w, binary.LittleEndian, uint64(len(header)))
	w.WriteString(header)

	r := rand.New(rand.NewPCG(1, 2))
	pool := make([]float32, 1<<24)
	for i := range pool {
		pool[i] = float32(r.NormFloat64())
	}
	buf := make([]byte, 0, 1<<20)
	for k, s := range specs {
		n := s.elems()
		start := int64(r.IntN(len(pool)))
		for i := int64(0); i < n; i++ {
			var b []byte
			switch s.dtype {
			case "F32":
				b = binary.LittleEndian.AppendUint32(buf[len(buf):], math.Float32bits(1+0.05*pool[(start+i)%int64(len(pool))]))
			default:
				x := float64(pool[(start+i*7)%int64(len(pool))]) * s.sigma
				if s.sq {
					x = x * x * math.Exp(2*float64(pool[(start+i*13)%int64(len(pool))]))
				}
				u := math.Float32bits(float32(x))
				b = binary.LittleEndian.AppendUint16(buf[len(buf):], uint16((u+0x7FFF+(u>>16)&1)>>16))
			}
			buf = buf[:len(buf)+len(b)]
			if len(buf) >= cap(buf)-8 {
				w.Write(buf)
				buf = buf[:0]
			}
		}
		if k%8 == 0 {
			fmt.Fprintf(os.Stderr, "\r%d/%d tensors", k+1, len(specs))
		}
	}
	w.Write(buf)
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "\r%d tensors, %.2f GiB: %s\n", len(specs), float64(8+int64(len(header))+off)/(1<<30), path)
	return os.Rename(tmp.Name(), path)
}
