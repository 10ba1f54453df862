package notice

// Catalogue is a language's messages, for the tests.
func Catalogue(lang string) map[string]string { return catalogues[lang] }
