//go:build !unix

package connlimit

// FDLimit returns 0: the limit is not known here.
func FDLimit() uint64 { return 0 }
