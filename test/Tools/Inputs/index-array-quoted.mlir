// array<index: 1> in a comment
func.func @f() attributes {note = "array<index: 1>", a = array<i64: 1>} {
  return
}
