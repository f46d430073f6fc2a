/* A TC classifier: not an XDP program. */
#include "bpf_mini.h"

SEC("tc")
int classify(void *skb)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
