package orderdoc

// Valid is valid, for FuzzValid.
var Valid = valid
