package lethe

import (
	"slices"
	"strings"
)

// Vector and full-text policies. A container's VectorEmbeddingPolicy says
// which paths of its items hold vectors (their element type, the distance
// function that compares them, their length), and its FullTextPolicy which
// paths hold text to search (and its language). The IndexingPolicy's
// VectorIndexes and FullTextIndexes index paths those policies declare.
// lethe keeps, validates and returns them as Cosmos DB does. The full-text
// functions of queries read the languages of the full-text policy
// (FullTextPolicy.language), VectorDistance the distance function and
// element type of a path's embedding (VectorEmbeddingPolicy.embedding).
// Items are not checked against the vector policy when written, as Cosmos
// DB does not check them: a vector of another length or type is kept, and
// VectorDistance is undefined for it.

// VectorEmbeddingPolicy declares the paths of a container's items that hold
// vectors, one VectorEmbedding per path.
type VectorEmbeddingPolicy struct {
	VectorEmbeddings []VectorEmbedding `json:"vectorEmbeddings"`
}

// VectorEmbedding describes the vectors at one path ("/embedding"; no
// wildcards, no arrays): the type of their elements (float32 when empty),
// the function that measures the distance between two of them (cosine when
// empty) and their number of elements (1536 when zero), as Cosmos DB's
// defaults are. Once the container has it, an embedding's settings cannot
// change: Replace may add paths and remove them, not change one.
type VectorEmbedding struct {
	Path             string                 `json:"path"`
	DataType         VectorDataType         `json:"dataType"`
	DistanceFunction VectorDistanceFunction `json:"distanceFunction"`
	Dimensions       uint32                 `json:"dimensions"`
}

// VectorDataType is the type of a vector's elements.
type VectorDataType string

// The vector element types Cosmos DB documents. Any case is accepted; the
// container keeps them in this form.
const (
	VectorDataTypeFloat32 VectorDataType = "float32"
	VectorDataTypeFloat16 VectorDataType = "float16"
	VectorDataTypeInt8    VectorDataType = "int8"
	VectorDataTypeUint8   VectorDataType = "uint8"
)

// VectorDistanceFunction is how the distance between two vectors is measured.
type VectorDistanceFunction string

// The distance functions. Any case is accepted; the container keeps them in
// this form.
const (
	VectorDistanceFunctionCosine     VectorDistanceFunction = "cosine"
	VectorDistanceFunctionDotProduct VectorDistanceFunction = "dotproduct"
	VectorDistanceFunctionEuclidean  VectorDistanceFunction = "euclidean"
)

// VectorIndex indexes the vectors at a path of the container's
// VectorEmbeddingPolicy. Its type bounds the vectors' dimensions: a flat
// index takes at most 505, quantizedFlat and diskANN at most 4,096. Like an
// embedding, a vector index's type cannot change once the container has it.
// flat and quantizedFlat indexes are exact in lethe (quantizedFlat keeps
// the vectors unquantized); a diskANN index is a graph whose searches are
// approximate, as the service's are.
type VectorIndex struct {
	Path string          `json:"path"`
	Type VectorIndexType `json:"type"`
}

// VectorIndexType is the kind of a vector index.
type VectorIndexType string

// The vector index types. Any case is accepted; the container keeps them in
// this form.
const (
	VectorIndexTypeFlat          VectorIndexType = "flat"
	VectorIndexTypeQuantizedFlat VectorIndexType = "quantizedFlat"
	VectorIndexTypeDiskANN       VectorIndexType = "diskANN"
)

// FullTextPolicy declares the paths of a container's items that hold text to
// search, and their language. DefaultLanguage is "en-US" when empty.
type FullTextPolicy struct {
	DefaultLanguage string         `json:"defaultLanguage"`
	FullTextPaths   []FullTextPath `json:"fullTextPaths"`
}

// FullTextPath is a path holding text ("/description"; no wildcards, no
// arrays) and the text's language: the policy's DefaultLanguage when empty.
// The languages are those of Cosmos DB: en-US (generally available), and
// de-DE, es-ES, fr-FR, it-IT, pt-PT and pt-BR (in preview); any case is
// accepted and kept in this form.
type FullTextPath struct {
	Path     string `json:"path"`
	Language string `json:"language"`
}

// FullTextIndex indexes the text at a path of the container's FullTextPolicy.
type FullTextIndex struct {
	Path string `json:"path"`
}

// language returns the language of the text at path (its property names)
// for the full-text functions: the path's, when the policy lists it, else
// the policy's default.
func (fp *FullTextPolicy) language(path []string) string {
	lang := fp.DefaultLanguage
	for _, tp := range fp.FullTextPaths {
		if policyPathIs(tp.Path, path) {
			lang = tp.Language
			break
		}
	}
	if tag, ok := textLCIDs[lang]; ok {
		return tag
	}
	return lang
}

// embedding returns the distance function and element type of the
// vectors at path (its property names) for VectorDistance, or "", "" when
// the policy does not list it.
func (vp *VectorEmbeddingPolicy) embedding(path []string) (distanceFunction, dataType string) {
	for _, e := range vp.VectorEmbeddings {
		if policyPathIs(e.Path, path) {
			return string(e.DistanceFunction), string(e.DataType)
		}
	}
	return "", ""
}

// policyPathIs reports whether the policy path p ("/a/b") names path.
func policyPathIs(p string, path []string) bool {
	for _, name := range path {
		if strings.Contains(name, "/") || !strings.HasPrefix(p, "/") || !strings.HasPrefix(p[1:], name) {
			return false
		}
		p = p[1+len(name):]
	}
	return p == ""
}

// policyKey returns the key of path's vector or full-text index: the
// policy path that names it, without its leading slash. ok is false when a
// name in path holds a slash, which no policy path can name (policyPathIs):
// the property "a/b" is not the path /a/b.
func policyKey(path []string) (key string, ok bool) {
	for _, name := range path {
		if strings.Contains(name, "/") {
			return "", false
		}
	}
	return strings.Join(path, "/"), true
}

// The defaults and limits of the vector policies, as Cosmos DB documents them.
const (
	defaultVectorDimensions = 1536
	maxFlatDimensions       = 505
	maxVectorIndexDims      = 4096
	defaultTextLanguage     = "en-US"
)

// textLanguages are the languages a full-text path may have.
var textLanguages = []string{"en-US", "de-DE", "es-ES", "fr-FR", "it-IT", "pt-PT", "pt-BR"}

// textLCIDs are the Windows locale ids (LCIDs) of textLanguages, which the
// service takes for a language too ("1033" for en-US): kept as given, read
// as their language.
var textLCIDs = map[string]string{
	"1033": "en-US", "1031": "de-DE", "3082": "es-ES", "1034": "es-ES", "1036": "fr-FR",
	"1040": "it-IT", "2070": "pt-PT", "1046": "pt-BR",
}

// textLanguage returns the language lang names (a tag of textLanguages, in
// any case, or an LCID of one) in its canonical spelling, or the LCID as
// given; ok is false for a language lethe does not analyze.
func textLanguage(lang string) (string, bool) {
	if _, ok := textLCIDs[lang]; ok {
		return lang, true
	}
	return canonical(lang, textLanguages...)
}

// canonical returns the element of names equal to s in any case, and
// whether there is one.
func canonical[S ~string](s S, names ...S) (S, bool) {
	for _, n := range names {
		if strings.EqualFold(string(s), string(n)) {
			return n, true
		}
	}
	return s, false
}

// normalizeSearchPolicies checks p's vector embedding and full-text
// policies, and the vector and full-text indexes of its indexing policy, and
// fills in their defaults and canonical spellings. p's policies are its own
// copies (normalizeProps clones them first).
func normalizeSearchPolicies(p *ContainerProperties) *Error {
	vectors := map[string]VectorEmbedding{}
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		for i := range vp.VectorEmbeddings {
			e := &vp.VectorEmbeddings[i]
			if err := checkPolicyPath("vector embedding", e.Path); err != nil {
				return err
			}
			if _, dup := vectors[e.Path]; dup {
				return badRequest("the vector embedding policy lists the path %q twice: a path has at most one embedding", e.Path)
			}
			if e.DataType == "" {
				e.DataType = VectorDataTypeFloat32
			}
			var ok bool
			if e.DataType, ok = canonical(e.DataType, VectorDataTypeFloat32, VectorDataTypeFloat16, VectorDataTypeInt8, VectorDataTypeUint8); !ok {
				return badRequest("the vector embedding of path %q has the data type %q: use float32, float16, int8 or uint8", e.Path, e.DataType)
			}
			if e.DistanceFunction == "" {
				e.DistanceFunction = VectorDistanceFunctionCosine
			}
			if e.DistanceFunction, ok = canonical(e.DistanceFunction, VectorDistanceFunctionCosine, VectorDistanceFunctionDotProduct, VectorDistanceFunctionEuclidean); !ok {
				return badRequest("the vector embedding of path %q has the distance function %q: use cosine, dotproduct or euclidean", e.Path, e.DistanceFunction)
			}
			if e.Dimensions == 0 {
				e.Dimensions = defaultVectorDimensions
			}
			vectors[e.Path] = *e
		}
	}
	texts := map[string]bool{}
	if fp := p.FullTextPolicy; fp != nil {
		if fp.DefaultLanguage == "" {
			fp.DefaultLanguage = defaultTextLanguage
		}
		var ok bool
		if fp.DefaultLanguage, ok = textLanguage(fp.DefaultLanguage); !ok {
			return badRequest("the full-text policy's default language %q is not supported: use %s", fp.DefaultLanguage, strings.Join(textLanguages, ", "))
		}
		for i := range fp.FullTextPaths {
			tp := &fp.FullTextPaths[i]
			if err := checkPolicyPath("full-text", tp.Path); err != nil {
				return err
			}
			if texts[tp.Path] {
				return badRequest("the full-text policy lists the path %q twice", tp.Path)
			}
			texts[tp.Path] = true
			if tp.Language == "" {
				tp.Language = fp.DefaultLanguage
			}
			if tp.Language, ok = textLanguage(tp.Language); !ok {
				return badRequest("the full-text path %q has the language %q, which is not supported: use %s", tp.Path, tp.Language, strings.Join(textLanguages, ", "))
			}
		}
	}
	ip := p.IndexingPolicy
	if ip == nil {
		return nil
	}
	if ip.IndexingMode == IndexingModeNone && (len(ip.VectorIndexes) > 0 || len(ip.FullTextIndexes) > 0) {
		return badRequest("a container whose indexing mode is none keeps no indexes: it cannot have vector or full-text indexes")
	}
	seen := map[string]bool{}
	for i := range ip.VectorIndexes {
		vi := &ip.VectorIndexes[i]
		e, ok := vectors[vi.Path]
		if !ok {
			// The service's words (its path written as in JSON, "\/" for
			// "/"), which @azure/cosmos's vector policy spec looks for,
			// then lethe's.
			return badRequest("Vector Indexing Policy's path::%s not matching in Embedding's path: the vector index path %q is not a path of the container's vector embedding policy",
				strings.ReplaceAll(vi.Path, "/", `\/`), vi.Path)
		}
		if seen[vi.Path] {
			return badRequest("the indexing policy lists the vector index path %q twice", vi.Path)
		}
		seen[vi.Path] = true
		if vi.Type, ok = canonical(vi.Type, VectorIndexTypeFlat, VectorIndexTypeQuantizedFlat, VectorIndexTypeDiskANN); !ok {
			return badRequest("the vector index of path %q has the type %q: use flat, quantizedFlat or diskANN", vi.Path, vi.Type)
		}
		limit := uint32(maxVectorIndexDims)
		if vi.Type == VectorIndexTypeFlat {
			limit = maxFlatDimensions
		}
		if e.Dimensions > limit {
			return badRequest("the vector index of path %q is %s, which takes vectors of at most %d dimensions, and the path's have %d", vi.Path, vi.Type, limit, e.Dimensions)
		}
	}
	clear(seen)
	for _, ti := range ip.FullTextIndexes {
		if !texts[ti.Path] {
			return badRequest("the full-text index path %q is not a path of the container's full-text policy", ti.Path)
		}
		if seen[ti.Path] {
			return badRequest("the indexing policy lists the full-text index path %q twice", ti.Path)
		}
		seen[ti.Path] = true
	}
	return nil
}

// checkPolicyPath checks a path of a vector embedding or full-text policy:
// a property path such as "/a/b", without the wildcards and array steps
// Cosmos DB does not support there.
func checkPolicyPath(what, path string) *Error {
	if strings.ContainsAny(path, "*?") || strings.Contains(path, "[]") {
		return badRequest("the %s path %q is invalid: wildcards (*, ?) and arrays ([]) are not supported", what, path)
	}
	if _, err := parseIndexPath(path + "/?"); err != nil {
		return badRequest(`the %s path %q is invalid: it must be a property path such as "/embedding" or "/a/b"`, what, path)
	}
	return nil
}

// searchPolicyChange refuses a replacement of a container's properties,
// old, by next that changes the settings of a vector embedding or the type
// of a vector index the container has: as in Cosmos DB, a path may be added
// or removed, and one to change must be removed first, then added back.
// Both are normalized.
func searchPolicyChange(old, next ContainerProperties) *Error {
	if old.VectorEmbeddingPolicy != nil && next.VectorEmbeddingPolicy != nil {
		for _, e := range next.VectorEmbeddingPolicy.VectorEmbeddings {
			i := slices.IndexFunc(old.VectorEmbeddingPolicy.VectorEmbeddings, func(o VectorEmbedding) bool { return o.Path == e.Path })
			if i >= 0 && old.VectorEmbeddingPolicy.VectorEmbeddings[i] != e {
				o := old.VectorEmbeddingPolicy.VectorEmbeddings[i]
				return badRequest("the vector embedding of path %q cannot be changed (from %s, %s, %d dimensions to %s, %s, %d): remove the path, then add it back",
					e.Path, o.DataType, o.DistanceFunction, o.Dimensions, e.DataType, e.DistanceFunction, e.Dimensions)
			}
		}
	}
	if old.IndexingPolicy != nil && next.IndexingPolicy != nil {
		for _, vi := range next.IndexingPolicy.VectorIndexes {
			i := slices.IndexFunc(old.IndexingPolicy.VectorIndexes, func(o VectorIndex) bool { return o.Path == vi.Path })
			if i >= 0 && old.IndexingPolicy.VectorIndexes[i].Type != vi.Type {
				return vectorIndexChanged(vi.Path, old.IndexingPolicy.VectorIndexes[i].Type, vi.Type)
			}
		}
	}
	return nil
}

// vectorIndexChanged refuses a change of the type of the vector index at
// path, in the service's words first, which @azure/cosmos's vector policy
// spec looks for.
func vectorIndexChanged(path string, from, to VectorIndexType) *Error {
	return badRequest("Vector Indexing Policy cannot be changed in Collection Replace: the vector index of path %q cannot be changed (from %s to %s): remove it, then add it back",
		path, from, to)
}

// vectorIndexTypeChange refuses next, the properties a Replace was given
// before they are normalized, when it changes the type of a vector index
// that old, the container's, has: the service says so before it checks the
// rest of next (a replace that also leaves out the vector embedding policy
// is refused for the change, not for the index's missing embedding).
func vectorIndexTypeChange(old, next ContainerProperties) *Error {
	if old.IndexingPolicy == nil || next.IndexingPolicy == nil {
		return nil
	}
	for _, vi := range next.IndexingPolicy.VectorIndexes {
		i := slices.IndexFunc(old.IndexingPolicy.VectorIndexes, func(o VectorIndex) bool { return o.Path == vi.Path })
		if i >= 0 && !strings.EqualFold(string(old.IndexingPolicy.VectorIndexes[i].Type), string(vi.Type)) {
			return vectorIndexChanged(vi.Path, old.IndexingPolicy.VectorIndexes[i].Type, vi.Type)
		}
	}
	return nil
}

// cloneSearchPolicies makes p's vector embedding and full-text policies, and
// its indexing policy's vector and full-text indexes, copies of their own.
// p.IndexingPolicy is already p's own.
func cloneSearchPolicies(p *ContainerProperties) {
	if vp := p.VectorEmbeddingPolicy; vp != nil {
		p.VectorEmbeddingPolicy = &VectorEmbeddingPolicy{VectorEmbeddings: slices.Clone(vp.VectorEmbeddings)}
	}
	if fp := p.FullTextPolicy; fp != nil {
		p.FullTextPolicy = &FullTextPolicy{DefaultLanguage: fp.DefaultLanguage, FullTextPaths: slices.Clone(fp.FullTextPaths)}
	}
	if ip := p.IndexingPolicy; ip != nil {
		ip.VectorIndexes = slices.Clone(ip.VectorIndexes)
		ip.FullTextIndexes = slices.Clone(ip.FullTextIndexes)
	}
}

// hasVectorIndexes reports whether props' indexing policy has vector
// indexes.
func hasVectorIndexes(props ContainerProperties) bool {
	return props.IndexingPolicy != nil && len(props.IndexingPolicy.VectorIndexes) > 0
}

// vectorIndexesOnShared refuses vector indexes in a store with shared
// throughput: Cosmos DB does not support vector indexing and search on
// shared-throughput databases.
func vectorIndexesOnShared(s *Store, props ContainerProperties) *Error {
	if !s.SharedThroughput() || !hasVectorIndexes(props) {
		return nil
	}
	return badRequest("vector indexes are not supported in a database with shared throughput (the store's Throughput or AutoscaleMaxThroughput): index %q in a database without it", props.IndexingPolicy.VectorIndexes[0].Path)
}
