package jinja

// StrftimeToGo is strftimeToGo, for the tests' fixed-clock strftime_now.
var StrftimeToGo = strftimeToGo
