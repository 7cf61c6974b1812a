// Package kernels holds lcttop's CUDA kernels: the LCT codec and the fused
// optimizer updates (lct.cu), and the GPT training kernels (gpt.cu); the PTX
// that nvcc 11.8 makes of each for compute_80, committed and embedded so that
// building lcttop needs no CUDA compiler (the driver compiles the PTX for the
// GPU at hand when package gpu loads it); and one CPU emulation of both
// sources (emu.h, emu.cc), which runs the very same kernels where there is
// no GPU, for the tests.
//
// Regenerate the PTX after editing a .cu file with `go generate ./kernels`
// (nvcc 11.8); check_ptx.sh fails when the committed PTX is stale. gpt.cu is
// compiled with --fmad=false, which keeps every product and sum rounded on
// its own, as the CPU ops compute them.
package kernels

//go:generate nvcc -ptx -arch=compute_80 -O3 -o lct.ptx lct.cu
//go:generate nvcc -ptx -arch=compute_80 --fmad=false -o gpt.ptx gpt.cu

import _ "embed"

// LCTPTX is lct.cu's PTX module.
//
//go:embed lct.ptx
var LCTPTX string

// GPTPTX is gpt.cu's PTX module.
//
//go:embed gpt.ptx
var GPTPTX string

// LCTSource and GPTSource are the kernels' sources, for the tests that check
// them against the PTX and the emulation.
//
//go:embed lct.cu
var LCTSource string

//go:embed gpt.cu
var GPTSource string

// GPTKernels lists gpt.cu's entry points.
var GPTKernels = []string{
	"gpt_embedding_forward",
	"gpt_embedding_backward_wte",
	"gpt_embedding_backward_wpe",
	"gpt_add",
	"gpt_add_v8",
	"gpt_gelu_forward",
	"gpt_gelu_forward_v8",
	"gpt_gelu_backward",
	"gpt_gelu_backward_v8",
	"gpt_gelu_backward_forward",
	"gpt_gelu_backward_forward_v8",
	"gpt_layernorm_forward",
	"gpt_layernorm_backward",
	"gpt_layernorm_params_partial",
	"gpt_bias_fill",
	"gpt_bias_fill_v8",
	"gpt_colsum_partial",
	"gpt_colsum_finish",
	"gpt_crossentropy",
	"gpt_attn_softmax",
	"gpt_attn_softmax_backward",
	"gpt_heads_to_bf16",
	"gpt_flash_fwd_d16",
	"gpt_flash_fwd_d32",
	"gpt_flash_fwd_d64",
	"gpt_flash_dq_d16",
	"gpt_flash_dq_d32",
	"gpt_flash_dq_d64",
	"gpt_flash_dkdv_d16",
	"gpt_flash_dkdv_d32",
	"gpt_flash_dkdv_d64",
	"gpt_adamw",
	"gpt_adamw_v8",
	"gpt_sgd",
	"gpt_first_mismatch",
}

// Launch shapes the host code and the kernels agree on.
const (
	LayerNormThreads = 256 // LN_THREADS: threads per block of the LayerNorm row kernels
	LayerNormRows    = 8   // LN_ROWS: rows per block of the LayerNorm row kernels, one warp a row
	AttentionThreads = 128 // ATT_THREADS: threads per row of the attention softmax kernels
	FlashThreads     = 128 // FA_THREADS: threads per block of the fused attention kernels
	FlashTile        = 64  // FA_TILE: queries (or keys) per block of the fused attention kernels
)
