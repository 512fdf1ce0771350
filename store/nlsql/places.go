package nlsql

import "strings"

// Places are written as names or as codes ("Massachusetts", "MA"; "Germany", "DE", "German"):
// a question may use either form whatever form the data holds.

// usStates are the US states (and DC) with their two-letter postal codes.
var usStates = [][2]string{{"AL", "Alabama"}, {"AK", "Alaska"}, {"AZ", "Arizona"}, {"AR", "Arkansas"}, {"CA", "California"},
	{"CO", "Colorado"}, {"CT", "Connecticut"}, {"DE", "Delaware"}, {"DC", "District of Columbia"}, {"FL", "Florida"}, {"GA", "Georgia"},
	{"HI", "Hawaii"}, {"ID", "Idaho"}, {"IL", "Illinois"}, {"IN", "Indiana"}, {"IA", "Iowa"}, {"KS", "Kansas"}, {"KY", "Kentucky"},
	{"LA", "Louisiana"}, {"ME", "Maine"}, {"MD", "Maryland"}, {"MA", "Massachusetts"}, {"MI", "Michigan"}, {"MN", "Minnesota"},
	{"MS", "Mississippi"}, {"MO", "Missouri"}, {"MT", "Montana"}, {"NE", "Nebraska"}, {"NV", "Nevada"}, {"NH", "New Hampshire"},
	{"NJ", "New Jersey"}, {"NM", "New Mexico"}, {"NY", "New York"}, {"NC", "North Carolina"}, {"ND", "North Dakota"}, {"OH", "Ohio"},
	{"OK", "Oklahoma"}, {"OR", "Oregon"}, {"PA", "Pennsylvania"}, {"RI", "Rhode Island"}, {"SC", "South Carolina"},
	{"SD", "South Dakota"}, {"TN", "Tennessee"}, {"TX", "Texas"}, {"UT", "Utah"}, {"VT", "Vermont"}, {"VA", "Virginia"},
	{"WA", "Washington"}, {"WV", "West Virginia"}, {"WI", "Wisconsin"}, {"WY", "Wyoming"}, {"PR", "Puerto Rico"}}

// countries are countries by ISO 3166 two- and three-letter codes, names and the words
// people use for them (demonyms included: "Japanese clients").
var countries = [][]string{
	{"US", "USA", "United States", "United States of America", "America", "U.S.", "American"},
	{"GB", "GBR", "United Kingdom", "UK", "Great Britain", "Britain", "British", "England", "English"},
	{"CA", "CAN", "Canada", "Canadian"}, {"MX", "MEX", "Mexico", "Mexican"}, {"BR", "BRA", "Brazil", "Brazilian"},
	{"AR", "ARG", "Argentina", "Argentinian"}, {"DE", "DEU", "Germany", "German"}, {"FR", "FRA", "France", "French"},
	{"IT", "ITA", "Italy", "Italian"}, {"ES", "ESP", "Spain", "Spanish"}, {"PT", "PRT", "Portugal", "Portuguese"},
	{"NL", "NLD", "Netherlands", "Holland", "Dutch"}, {"BE", "BEL", "Belgium", "Belgian"}, {"CH", "CHE", "Switzerland", "Swiss"},
	{"AT", "AUT", "Austria", "Austrian"}, {"SE", "SWE", "Sweden", "Swedish"}, {"NO", "NOR", "Norway", "Norwegian"},
	{"DK", "DNK", "Denmark", "Danish"}, {"FI", "FIN", "Finland", "Finnish"}, {"IE", "IRL", "Ireland", "Irish"},
	{"PL", "POL", "Poland", "Polish"}, {"CZ", "CZE", "Czechia", "Czech Republic", "Czech"}, {"GR", "GRC", "Greece", "Greek"},
	{"TR", "TUR", "Turkey", "Türkiye", "Turkish"}, {"RU", "RUS", "Russia", "Russian"}, {"UA", "UKR", "Ukraine", "Ukrainian"},
	{"IN", "IND", "India", "Indian"}, {"CN", "CHN", "China", "Chinese"}, {"JP", "JPN", "Japan", "Japanese"},
	{"KR", "KOR", "South Korea", "Korea", "Korean"}, {"AU", "AUS", "Australia", "Australian"}, {"NZ", "NZL", "New Zealand"},
	{"ZA", "ZAF", "South Africa", "South African"}, {"NG", "NGA", "Nigeria", "Nigerian"}, {"EG", "EGY", "Egypt", "Egyptian"},
	{"KE", "KEN", "Kenya", "Kenyan"}, {"IL", "ISR", "Israel", "Israeli"}, {"AE", "ARE", "United Arab Emirates", "UAE"},
	{"SA", "SAU", "Saudi Arabia", "Saudi"}, {"SG", "SGP", "Singapore"}, {"ID", "IDN", "Indonesia", "Indonesian"},
	{"TH", "THA", "Thailand", "Thai"}, {"VN", "VNM", "Vietnam", "Vietnamese"}, {"PH", "PHL", "Philippines", "Filipino"},
	{"MY", "MYS", "Malaysia", "Malaysian"}, {"CL", "CHL", "Chile", "Chilean"}, {"CO", "COL", "Colombia", "Colombian"},
	{"PE", "PER", "Peru", "Peruvian"}}

// ambiguousCodes are codes that are also everyday English words: they name a place only
// when the data holds them as they are.
var ambiguousCodes = map[string]bool{"in": true, "or": true, "me": true, "hi": true, "ok": true, "la": true, "oh": true, "id": true,
	"no": true, "it": true, "be": true, "at": true, "us": true, "my": true, "co": true, "pa": true, "de": true, "es": true, "per": true,
	"can": true, "english": true}

// placeKind is which place list a column's values come from: "state", "country" or "".
func placeKind(c *Column) string {
	for _, w := range words(c.Name) {
		switch w {
		case "state", "states", "province", "region", "st":
			return "state"
		case "country", "countries", "nation", "nationality":
			return "country"
		}
	}
	return ""
}

// placeNames are the other ways of writing value v of column c (a place), lower case: the
// state's name for its code and the reverse, a country's codes, names and demonyms.
func placeNames(c *Column, v string) []string {
	lv := strings.ToLower(v)
	var out []string
	switch placeKind(c) {
	case "state":
		for _, s := range usStates {
			if lv == strings.ToLower(s[0]) || lv == strings.ToLower(s[1]) {
				for _, n := range s {
					if n = strings.ToLower(n); n != lv && !ambiguousCodes[n] {
						out = append(out, n)
					}
				}
			}
		}
	case "country":
		for _, cs := range countries {
			for _, n := range cs {
				if strings.ToLower(n) != lv {
					continue
				}
				for _, o := range cs {
					if o = strings.ToLower(strings.ReplaceAll(o, ".", "")); o != lv && !ambiguousCodes[o] {
						out = append(out, o)
					}
				}
				break
			}
		}
	}
	return out
}
