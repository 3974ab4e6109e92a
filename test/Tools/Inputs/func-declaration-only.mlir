func.func private @f(%a: f32)
