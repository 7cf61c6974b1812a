package torchfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// RefusedError is a pickle that asked for something beyond tensors,
// storages and plain containers: Global names what it asked for.
type RefusedError struct{ Global string }

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the pickle asks for %s, which is not a tensor, a storage or a plain container: refused, nothing run", e.Global)
}

// storageDTypes maps torch's storage classes to safetensors dtypes.
var storageDTypes = map[string]string{
	"BFloat16Storage": "BF16", "HalfStorage": "F16", "FloatStorage": "F32", "DoubleStorage": "F64",
	"LongStorage": "I64", "IntStorage": "I32", "ShortStorage": "I16", "CharStorage": "I8",
	"ByteStorage": "U8", "BoolStorage": "BOOL",
}

// torchDTypes maps torch's dtype objects (torch.bfloat16, ...) to safetensors dtypes.
var torchDTypes = map[string]string{
	"bfloat16": "BF16", "float16": "F16", "half": "F16", "float32": "F32", "float": "F32", "float64": "F64", "double": "F64",
	"int64": "I64", "long": "I64", "int32": "I32", "int": "I32", "int16": "I16", "short": "I16", "int8": "I8",
	"uint8": "U8", "bool": "BOOL",
}

// storageClass is a torch storage class (torch.BFloat16Storage, ...).
type storageClass struct{ dtype string }

// storageRef is a storage a persistent id names: its record and size.
type storageRef struct {
	dtype string
	key   string
	numel int64
}

// tensorRef is a tensor the pickle rebuilds: a view of a storage.
type tensorRef struct {
	storage *storageRef
	offset  int64
	shape   []int64
	stride  []int64
}

// rebuildTensor is torch._utils._rebuild_tensor_v2 (and _rebuild_tensor).
type rebuildTensor struct{}

func (rebuildTensor) Call(args ...interface{}) (interface{}, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: %d arguments, want at least 4", len(args))
	}
	st, ok := args[0].(*storageRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_tensor_v2: the first argument is not a storage")
	}
	off, ok := asInt(args[1])
	if !ok || off < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2: storage offset %v", args[1])
	}
	shape, ok1 := intTuple(args[2])
	stride, ok2 := intTuple(args[3])
	if !ok1 || !ok2 || len(shape) != len(stride) {
		return nil, fmt.Errorf("_rebuild_tensor_v2: size %v and stride %v", args[2], args[3])
	}
	return &tensorRef{storage: st, offset: off, shape: shape, stride: stride}, nil
}

// rebuildParameter is torch._utils._rebuild_parameter(_with_state): the
// parameter's data is the tensor.
type rebuildParameter struct{}

func (rebuildParameter) Call(args ...interface{}) (interface{}, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_rebuild_parameter: no arguments")
	}
	t, ok := args[0].(*tensorRef)
	if !ok {
		return nil, fmt.Errorf("_rebuild_parameter: the data is not a tensor")
	}
	return t, nil
}

// torchSize is torch.Size: the tuple it is made from.
type torchSize struct{}

func (torchSize) Call(args ...interface{}) (interface{}, error) {
	if len(args) == 0 {
		return types.NewTupleFromSlice(nil), nil
	}
	return args[0], nil
}

// dtypeObj is torch.bfloat16 and the like; enumObj torch.strided,
// torch.contiguous_format and other names that are only labels.
type dtypeObj struct{ dtype string }
type enumObj struct{ name string }

// layoutByName is torch.serialization._get_layout("torch.strided").
type layoutByName struct{}

func (layoutByName) Call(args ...interface{}) (interface{}, error) {
	if len(args) == 1 {
		if s, ok := args[0].(string); ok {
			return &enumObj{name: s}, nil
		}
	}
	return nil, fmt.Errorf("_get_layout: arguments %v", args)
}

// enumMember is getattr as checkpoint metadata uses it: a member of an
// allowed enum (MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT), only.
type enumMember struct{}

func (enumMember) Call(args ...interface{}) (interface{}, error) {
	if len(args) == 2 {
		e, ok1 := args[0].(*enumObj)
		name, ok2 := args[1].(string)
		if ok1 && ok2 {
			return &enumObj{name: e.name + "." + name}, nil
		}
	}
	return nil, &RefusedError{Global: fmt.Sprintf("builtins.getattr of %T", args[0])}
}

// record is an instance of an allowed dataclass (the metadata of a
// torch.distributed.checkpoint folder): its fields by name.
type record struct {
	class  string
	fields map[string]interface{}
}

// recordClass makes records of one allowed class.
type recordClass struct{ name string }

func (c recordClass) PyNew(args ...interface{}) (interface{}, error) {
	return &record{class: c.name, fields: map[string]interface{}{}}, nil
}

func (c recordClass) Call(args ...interface{}) (interface{}, error) { return c.PyNew(args...) }

func (r *record) PyDictSet(key, value interface{}) error {
	k, ok := key.(string)
	if !ok {
		return fmt.Errorf("%s: a field named %v", r.class, key)
	}
	r.fields[k] = value
	return nil
}

func (r *record) PySetState(state interface{}) error {
	switch s := state.(type) {
	case *types.Dict:
		for _, e := range *s {
			if err := r.PyDictSet(e.Key, e.Value); err != nil {
				return err
			}
		}
	case *types.Tuple:
		if r.class == "TensorProperties" && s.Len() > 0 { // PyTorch 1.13: (dtype, layout, ...)
			r.fields["dtype"] = s.Get(0)
			return nil
		}
		for _, part := range *s { // (dict, slots)
			if d, ok := part.(*types.Dict); ok {
				if err := r.PySetState(d); err != nil {
					return err
				}
			}
		}
	case nil:
	default:
		return fmt.Errorf("%s: state of type %T", r.class, state)
	}
	return nil
}

// checkpointRecords are the dataclasses a torch.distributed.checkpoint
// folder's .metadata holds, in the modules of PyTorch 1.13 and 2.x.
var checkpointRecords = map[string]bool{
	"Metadata": true, "TensorStorageMetadata": true, "ChunkStorageMetadata": true, "BytesStorageMetadata": true,
	"MetadataIndex": true, "TensorProperties": true, "_StorageInfo": true, "StorageMeta": true,
}

var checkpointModules = []string{
	"torch.distributed.checkpoint.", "torch.distributed._shard.checkpoint.", "torch.distributed._shard.sharded_tensor.metadata",
}

// findClass allows tensors, storages and plain containers, and, with
// records, the dataclasses of a checkpoint folder's metadata; everything
// else is refused by name. (collections.OrderedDict, and the object and
// copyreg helpers that only build instances of allowed classes, are
// handled by the unpickler itself.)
func findClass(records bool) func(module, name string) (interface{}, error) {
	return func(module, name string) (interface{}, error) {
		full := module + "." + name
		switch {
		case module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_tensor"):
			return rebuildTensor{}, nil
		case module == "torch._utils" && (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state"):
			return rebuildParameter{}, nil
		case module == "torch" && storageDTypes[name] != "":
			return &storageClass{dtype: storageDTypes[name]}, nil
		case module == "torch" && name == "Size":
			return torchSize{}, nil
		case module == "torch" && torchDTypes[name] != "":
			return &dtypeObj{dtype: torchDTypes[name]}, nil
		case module == "torch" && (name == "strided" || strings.HasSuffix(name, "_format")):
			return &enumObj{name: name}, nil
		case module == "torch.serialization" && name == "_get_layout":
			return layoutByName{}, nil
		case records && (module == "builtins" || module == "__builtin__") && name == "getattr":
			return enumMember{}, nil
		case records && name == "MEM_FORMAT_ENCODING" && strings.HasPrefix(module, "torch.distributed."):
			return &enumObj{name: name}, nil
		case (module == "builtins" || module == "__builtin__") && (name == "dict" || name == "list" || name == "tuple" || name == "set" || name == "frozenset"):
			return containerClass{name}, nil
		case records && checkpointRecords[name]:
			for _, m := range checkpointModules {
				if strings.HasPrefix(module+".", m) {
					return recordClass{name: name}, nil
				}
			}
		}
		return nil, &RefusedError{Global: full}
	}
}

// containerClass is a builtin container type named by a pickle.
type containerClass struct{ name string }

func (c containerClass) Call(args ...interface{}) (interface{}, error) {
	switch c.name {
	case "dict":
		return types.NewDict(), nil
	case "list", "set", "frozenset":
		if len(args) == 1 {
			if l, ok := args[0].(*types.List); ok {
				return l, nil
			}
		}
		return types.NewList(), nil
	}
	if len(args) == 1 {
		if t, ok := args[0].(*types.Tuple); ok {
			return t, nil
		}
	}
	return types.NewTupleFromSlice(nil), nil
}

// unpickle reads one pickle with the allowed classes; persistent ids name
// storages (persist may be nil where none may appear).
func unpickle(r io.Reader, records bool, persist func(interface{}) (interface{}, error)) (v interface{}, err error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPickle+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPickle {
		return nil, fmt.Errorf("a pickle of more than %d bytes", maxPickle)
	}
	if err := checkLengths(b); err != nil {
		return nil, fmt.Errorf("damaged pickle: %v", err)
	}
	u := pickle.NewUnpickler(bytes.NewReader(b))
	u.FindClass = findClass(records)
	u.PersistentLoad = persist
	if persist == nil {
		u.PersistentLoad = func(interface{}) (interface{}, error) {
			return nil, fmt.Errorf("a persistent id where none belongs")
		}
	}
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("damaged pickle (%v)", p)
		}
	}()
	return u.Load()
}

// storagePersist is torch.save's persistent_load: ('storage', class, key,
// location, numel) names a storage record.
func storagePersist(id interface{}) (interface{}, error) {
	t, ok := id.(*types.Tuple)
	if !ok || t.Len() < 5 {
		return nil, fmt.Errorf("persistent id %v: want ('storage', class, key, location, size)", id)
	}
	if kind, _ := t.Get(0).(string); kind != "storage" {
		return nil, fmt.Errorf("persistent id of kind %v: only storages are read", t.Get(0))
	}
	cls, ok := t.Get(1).(*storageClass)
	if !ok {
		if d, isDType := t.Get(1).(*dtypeObj); isDType { // newer PyTorch may name a dtype
			cls, ok = &storageClass{dtype: d.dtype}, true
		}
	}
	key, okKey := t.Get(2).(string)
	numel, okN := asInt(t.Get(4))
	if !ok || !okKey || !okN || numel < 0 {
		return nil, fmt.Errorf("persistent id %v: not a storage this reader knows", id)
	}
	return &storageRef{dtype: cls.dtype, key: key, numel: numel}, nil
}

func asInt(v interface{}) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), true
		}
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func intTuple(v interface{}) ([]int64, bool) {
	var items []interface{}
	switch x := v.(type) {
	case *types.Tuple:
		items = *x
	case *types.List:
		items = *x
	default:
		return nil, false
	}
	out := make([]int64, len(items))
	for i, it := range items {
		n, ok := asInt(it)
		if !ok {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// maxPickle bounds a pickle read whole: a checkpoint's holds names and
// numbers, its tensors' bytes lie elsewhere.
const maxPickle = 1 << 30

// checkLengths walks a pickle's opcodes and checks that every length an
// opcode gives fits in the bytes that follow, so that a damaged length
// cannot make the unpickler allocate gigabytes before it reads; it stops
// at STOP or at an opcode it does not know (which the unpickler reports).
func checkLengths(b []byte) error {
	i := 0
	need := func(n uint64) error {
		if n > uint64(len(b)-i) {
			return fmt.Errorf("opcode at byte %d asks for %d bytes, %d follow", i, n, len(b)-i)
		}
		return nil
	}
	skipLines := func(k int) error {
		for range k {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				return fmt.Errorf("a line at byte %d runs off the end", i)
			}
			i += j + 1
		}
		return nil
	}
	for i < len(b) {
		op := b[i]
		i++
		var err error
		switch op {
		case '.':
			return nil
		case 'K', 'h', 'q', 0x82, 0x80: // one-byte argument
			err = need(1)
			i++
		case 'M', 0x83:
			err = need(2)
			i += 2
		case 'J', 'j', 'r', 0x84:
			err = need(4)
			i += 4
		case 'G', 0x95: // BINFLOAT, FRAME
			err = need(8)
			i += 8
		case 'U', 'C', 0x8c, 0x8a: // one-byte length, then data
			if err = need(1); err == nil {
				n := uint64(b[i])
				i++
				err = need(n)
				i += int(n)
			}
		case 'T', 'B', 'X', 0x8b: // four-byte length
			if err = need(4); err == nil {
				n := uint64(binary.LittleEndian.Uint32(b[i:]))
				i += 4
				err = need(n)
				i += int(n)
			}
		case 0x8d, 0x8e, 0x96: // eight-byte length
			if err = need(8); err == nil {
				n := binary.LittleEndian.Uint64(b[i:])
				i += 8
				if err = need(n); err == nil {
					i += int(n)
				}
			}
		case 'I', 'L', 'S', 'V', 'F', 'g', 'p', 'P':
			err = skipLines(1)
		case 'i', 'c':
			err = skipLines(2)
		case '(', ')', ']', '}', 'N', 0x88, 0x89, 'R', 'b', 'a', 'e', 's', 'u', 't', 0x85, 0x86, 0x87,
			'l', 'd', 'o', '0', '1', '2', 0x81, 0x92, 0x93, 0x94, 0x8f, 0x90, 0x91, 'Q', 0x97, 0x98:
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}
