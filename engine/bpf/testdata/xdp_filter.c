/* Two XDP programs sharing maps, a .rodata constant and a bpf-to-bpf call:
 * what clang makes of ordinary XDP C. Build with build.sh. */
#include "bpf_mini.h"

const volatile __u16 drop_port = 53; /* .rodata: BPF_PSEUDO_MAP_VALUE loads */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16);
} proto_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2); /* 0: passed, 1: dropped */
} verdicts SEC(".maps");

static __noinline int bump(__u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&proto_hash, &key);
	__u64 one = 1;

	if (v) {
		__sync_fetch_and_add(v, 1);
		return 0;
	}
	return bpf_map_update_elem(&proto_hash, &key, &one, 1 /* BPF_NOEXIST */);
}

static __always_inline int verdict(__u32 k)
{
	__u64 *c = bpf_map_lookup_elem(&verdicts, &k);

	if (c)
		__sync_fetch_and_add(c, 1);
	return k ? XDP_DROP : XDP_PASS;
}

SEC("xdp")
int xdp_filter(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *ip, *udp;
	__u32 ihl;

	if (data + 14 > data_end)
		return verdict(0);
	if (*(__u16 *)(data + 12) != __builtin_bswap16(0x0800))
		return verdict(0);
	ip = data + 14;
	if ((void *)(ip + 20) > data_end)
		return verdict(0);
	bump(ip[9]);
	if (ip[9] != 17)
		return verdict(0);
	ihl = (ip[0] & 0xf) * 4;
	udp = ip + ihl;
	if ((void *)(udp + 8) > data_end)
		return verdict(0);
	if (__builtin_bswap16(*(__u16 *)(udp + 2)) == drop_port)
		return verdict(1);
	return verdict(0);
}

SEC("xdp")
int xdp_count_all(struct xdp_md *ctx)
{
	bump(255);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
