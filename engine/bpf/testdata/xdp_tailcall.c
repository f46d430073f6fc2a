/* An XDP program using a tail call through a program array. */
#include "bpf_mini.h"

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(key_size, 4);
	__uint(value_size, 4);
	__uint(max_entries, 4);
} jmp_table SEC(".maps");

SEC("xdp")
int xdp_dispatch(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &jmp_table, ctx->rx_queue_index & 3);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
