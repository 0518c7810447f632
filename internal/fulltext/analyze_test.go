package fulltext

import (
	"slices"
	"testing"
)

// TestStem checks the stemmer against the examples the algorithm's paper
// gives for each step.
func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		// step 1a
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"}, {"cats", "cat"},
		// step 1b
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"}, {"bled", "bled"},
		{"motoring", "motor"}, {"sing", "sing"},
		{"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"},
		{"tanned", "tan"}, {"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"},
		{"failing", "fail"}, {"filing", "file"},
		// step 1c
		{"happy", "happi"}, {"sky", "sky"},
		// step 2
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
		{"valenci", "valenc"}, {"hesitanci", "hesit"}, {"digitizer", "digit"},
		{"conformabli", "conform"}, {"radicalli", "radic"}, {"differentli", "differ"},
		{"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
		{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"},
		{"decisiveness", "decis"}, {"hopefulness", "hope"}, {"callousness", "callous"},
		{"formaliti", "formal"}, {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"},
		// step 3
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"},
		{"electriciti", "electr"}, {"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
		// step 4
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"}, {"airliner", "airlin"},
		{"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"},
		{"irritant", "irrit"}, {"replacement", "replac"}, {"adjustment", "adjust"},
		{"dependent", "depend"}, {"adoption", "adopt"}, {"homologou", "homolog"},
		{"communism", "commun"}, {"activate", "activ"}, {"angulariti", "angular"},
		{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"},
		// step 5
		{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		// the paper's conflation example
		{"connect", "connect"}, {"connected", "connect"}, {"connecting", "connect"},
		{"connection", "connect"}, {"connections", "connect"},
		// words of the search examples
		{"search", "search"}, {"searching", "search"}, {"searches", "search"}, {"searched", "search"},
		{"helmets", "helmet"}, {"bicycles", "bicycl"}, {"bicycle", "bicycl"},
		// kept: short, or not made of a to z
		{"is", "is"}, {"as", "as"}, {"x86", "x86"}, {"café", "café"},
	}
	for _, tt := range tests {
		if got := stem(tt.in); got != tt.want {
			t.Errorf("stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		text, lang string
		want       []string
	}{
		{"", "en-US", nil},
		{"  ,.;  ", "en-US", nil},
		// The azcosmos suite's item and search.
		{"Azure Cosmos DB Full Text Search", "en-US", []string{"azur", "cosmo", "db", "full", "text", "search"}},
		{"Learn about the powerful full-text search capabilities in Azure Cosmos DB", "en-US",
			[]string{"learn", "about", "power", "full", "text", "search", "capabl", "azur", "cosmo", "db"}},
		{"search", "en-US", []string{"search"}},
		// Case folding, stop words, the language's case, "" and an
		// unknown language are English.
		{"The RED Bicycle and THE skateboards", "EN-us", []string{"red", "bicycl", "skateboard"}},
		{"the a an of", "", nil},
		{"Bicycles", "xx-YY", []string{"bicycl"}},
		// Joiners: apostrophes between letters, periods and commas
		// between digits; possessives dropped.
		{"don't stop: it's 3.14, not 1,000.5!", "en-US", []string{"don't", "stop", "3.14", "1,000.5"}},
		{"Cosmos's index’s", "en-US", []string{"cosmo", "index"}},
		{"end. 'quoted' a.b 1.x", "en-US", []string{"end", "quot", "b", "1", "x"}},
		{"snake_case x2 ünïcode ÉTÉ", "en-US", []string{"snake_case", "x2", "ünïcode", "été"}},
		{"日本語 テキスト", "en-US", []string{"日本語", "テキスト"}},
		// Other languages: folded, not stemmed, no stop words.
		{"Die Fahrräder und die Autos", "de-DE", []string{"die", "fahrräder", "und", "die", "autos"}},
		{"Les Voitures", "fr-FR", []string{"les", "voitures"}},
		{"searching THE", "pt-br", []string{"searching", "the"}},
	}
	for _, tt := range tests {
		if got := Terms(tt.text, tt.lang); !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q, %q) = %q, want %q", tt.text, tt.lang, got, tt.want)
		}
	}
}

// FuzzTerms checks that the analyzer never panics, and that its terms are
// never empty and analyze to themselves again in a language that does not
// stem (tokenization is stable).
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"Azure Cosmos DB", "don't 3.14", "a'b'c 1,2,3 x.", "\xff'\xff", "ünï_code’s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		Terms(text, "en-US")
		for _, term := range Terms(text, "fr-FR") {
			if term == "" {
				t.Fatalf("Terms(%q) has an empty term", text)
			}
			if again := Terms(term, "fr-FR"); len(again) != 1 || again[0] != term {
				t.Fatalf("Terms(%q) has %q, which analyzes to %q", text, term, again)
			}
		}
	})
}
