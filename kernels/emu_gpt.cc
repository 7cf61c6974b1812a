// The kernels of gpt.cu in the emulation's table (emu.h).

#include "emu.h"
#include "gpt.cu"

extern const EmuKernel emu_gpt_kernels[] = {
    EMU_KERNEL(gpt_embedding_forward),
    EMU_KERNEL(gpt_embedding_backward_wte),
    EMU_KERNEL(gpt_embedding_backward_wpe),
    EMU_KERNEL(gpt_add),
    EMU_KERNEL(gpt_add_v8),
    EMU_KERNEL(gpt_gelu_forward),
    EMU_KERNEL(gpt_gelu_forward_v8),
    EMU_KERNEL(gpt_gelu_backward),
    EMU_KERNEL(gpt_gelu_backward_v8),
    EMU_KERNEL(gpt_gelu_backward_forward),
    EMU_KERNEL(gpt_gelu_backward_forward_v8),
    EMU_KERNEL(gpt_layernorm_forward),
    EMU_KERNEL(gpt_layernorm_backward),
    EMU_KERNEL(gpt_layernorm_params_partial),
    EMU_KERNEL(gpt_colsum_partial),
    EMU_KERNEL(gpt_colsum_finish),
    EMU_KERNEL(gpt_bias_fill),
    EMU_KERNEL(gpt_bias_fill_v8),
    EMU_KERNEL(gpt_crossentropy),
    EMU_KERNEL(gpt_attn_softmax),
    EMU_KERNEL(gpt_attn_softmax_backward),
    EMU_KERNEL(gpt_heads_to_bf16),
    EMU_KERNEL(gpt_flash_fwd_d16),
    EMU_KERNEL(gpt_flash_fwd_d32),
    EMU_KERNEL(gpt_flash_fwd_d64),
    EMU_KERNEL(gpt_flash_dq_d16),
    EMU_KERNEL(gpt_flash_dq_d32),
    EMU_KERNEL(gpt_flash_dq_d64),
    EMU_KERNEL(gpt_flash_dkdv_d16),
    EMU_KERNEL(gpt_flash_dkdv_d32),
    EMU_KERNEL(gpt_flash_dkdv_d64),
    EMU_KERNEL(gpt_adamw),
    EMU_KERNEL(gpt_adamw_v8),
    EMU_KERNEL(gpt_sgd),
    EMU_KERNEL(gpt_first_mismatch),
};
extern const int emu_gpt_kernel_count = sizeof(emu_gpt_kernels) / sizeof(emu_gpt_kernels[0]);
