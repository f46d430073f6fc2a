//go:build !linux

package hostsrc

// Source reads one interface; on this operating system it cannot be opened.
type Source struct{}

// Open fails with ErrNotLinux after checking the name.
func Open(ifname string) (*Source, error) {
	if err := ValidateName(ifname); err != nil {
		return nil, err
	}
	return nil, ErrNotLinux
}

// Ifname returns "".
func (s *Source) Ifname() string { return "" }

// Notes returns nil.
func (s *Source) Notes() []string { return nil }

// Read fails with ErrNotLinux.
func (s *Source) Read() (Sample, error) { return Sample{}, ErrNotLinux }

// ReadInto fails with ErrNotLinux.
func (s *Source) ReadInto(*Sample) error { return ErrNotLinux }

// Close does nothing.
func (s *Source) Close() error { return nil }
