/* An XDP program calling a helper the interpreter does not have. */
#include "bpf_mini.h"

SEC("xdp")
int xdp_random_drop(struct xdp_md *ctx)
{
	return bpf_get_prandom_u32() & 1 ? XDP_DROP : XDP_PASS;
}

char _license[] SEC("license") = "GPL";
