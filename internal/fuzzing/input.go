package fuzzing

// Input reads choices from fuzz bytes.
type Input struct {
	data []byte
}

// New reads data; the fuzz engine owns it, so it is not modified.
func New(data []byte) *Input { return &Input{data: data} }

// Byte is the next byte, 0 once the bytes ran out.
func (in *Input) Byte() byte {
	if len(in.data) == 0 {
		return 0
	}
	b := in.data[0]
	in.data = in.data[1:]
	return b
}

// Intn is a number in [0, n); 0 when n <= 1.
func (in *Input) Intn(n int) int {
	if n <= 1 {
		in.Byte()
		return 0
	}
	return int(in.Byte()) % n
}

// Bool is one bit of choice.
func (in *Input) Bool() bool { return in.Byte()&1 == 1 }

// Raw is up to max bytes of the input as a string, any bytes at all
// (invalid UTF-8, control characters, newlines) included.
func (in *Input) Raw(max int) string {
	n := in.Intn(max + 1)
	if n > len(in.data) {
		n = len(in.data)
	}
	s := string(in.data[:n])
	in.data = in.data[n:]
	return s
}

// Word is one of vocab for choice bytes below 224, else (or when vocab is
// empty) up to 40 raw bytes: mutated bytes mostly keep names colliding.
func (in *Input) Word(vocab ...string) string {
	i := int(in.Byte())
	if len(vocab) > 0 && i < 224 {
		return vocab[i%len(vocab)]
	}
	return in.Raw(40)
}

// Pick is one of xs, which must not be empty.
func Pick[T any](in *Input, xs ...T) T { return xs[in.Intn(len(xs))] }
