// RUN: poot-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule: every message the dialect can emit.

//===-- argument and result markers -------------------------------------===//

// expected-error @+1 {{argument #0 marked pos: a pos slot must be tensor<i32> or a per-row tensor<Bxi32>, got 'tensor<2x2xi32>'}}
func.func @pos_rank(%p: tensor<2x2xi32> {poot.slot = #poot.slot<pos>}) { return }

// -----

// expected-error @+1 {{a slot map must be a 2-D i32 tensor [rows, cap]}}
func.func @slot_map_rank(%r: tensor<8xi32> {poot.slot = #poot.slot<slot_map>}) { return }

// -----

// expected-error @+1 {{a write map must be a 1-D i32 tensor [rows * tokens]}}
func.func @write_map_type(%w: tensor<8xf32> {poot.slot = #poot.slot<write_map>}) { return }

// -----

// expected-error @+1 {{validation slots mark results, not arguments}}
func.func @validation_arg(%v: tensor<i1> {poot.slot = #poot.slot<validation>}) { return }

// -----

// expected-error @+1 {{a declared range needs an i32 tensor, got 'tensor<f32>'}}
func.func @range_float(%x: tensor<f32> {poot.range = #poot.range<0, 3>}) { return }

// -----

// expected-error @+1 {{'poot.slot' must be a #poot.slot attribute}}
func.func @slot_wrong_attr(%x: tensor<i32> {poot.slot = 1 : i32}) { return }

// -----

// expected-error @+1 {{'poot.range' must be a #poot.range attribute}}
func.func @range_wrong_attr(%x: tensor<i32> {poot.range = [0, 1]}) { return }

// -----

// expected-error @+1 {{unknown poot argument attribute "poot.bogus"}}
func.func @unknown_arg_attr(%x: tensor<i32> {poot.bogus}) { return }

// -----

// expected-error @+1 {{result #0: a validation output must be tensor<i1>, got 'tensor<2xi1>'}}
func.func @validation_shape(%x: tensor<2xi1>) -> (tensor<2xi1> {poot.slot = #poot.slot<validation>}) {
  return %x : tensor<2xi1>
}

// -----

// expected-error @+1 {{state out 'k0' has type 'tensor<8xf32>' but its state argument has 'tensor<4xf32>'}}
func.func @state_type(%k: tensor<4xf32> {poot.slot = #poot.slot<state "k0">}, %x: tensor<8xf32>)
    -> (tensor<8xf32> {poot.slot = #poot.slot<state "k0">}) {
  return %x : tensor<8xf32>
}

// -----

// expected-error @+1 {{state out 'v0' has no state argument of the same name}}
func.func @state_orphan(%x: tensor<4xf32>) -> (tensor<4xf32> {poot.slot = #poot.slot<state "v0">}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{only state and validation slots mark results}}
func.func @pos_result(%x: tensor<i32>) -> (tensor<i32> {poot.slot = #poot.slot<pos>}) {
  return %x : tensor<i32>
}

// -----

// expected-error @+1 {{unknown poot result attribute "poot.range"}}
func.func @range_result(%x: tensor<i32>) -> (tensor<i32> {poot.range = #poot.range<0, 1>}) {
  return %x : tensor<i32>
}

// -----

// expected-error @+1 {{a state slot needs a name}}
func.func @state_unnamed(%k: tensor<4xf32> {poot.slot = #poot.slot<state>}) { return }

// -----

// expected-error @+1 {{only state slots carry a name}}
func.func @pos_named(%p: tensor<i32> {poot.slot = #poot.slot<pos "p">}) { return }

// -----

// expected-error @+1 {{'poot.name' must be a non-empty string}}
func.func @name_not_string(%p: tensor<i32> {poot.name = 3 : i32}) { return }

// -----

// expected-error @+1 {{range min (5) exceeds max (2)}}
func.func @range_inverted(%p: tensor<i32> {poot.range = #poot.range<5, 2>}) { return }

// -----

//===-- primitives ------------------------------------------------------===//

func.func @iota_dim() {
  // expected-error @+1 {{dim 2 is out of range for rank 2}}
  %0 = poot.iota dim = 2 : tensor<4x4xi32>
  return
}

// -----

func.func @iota_bool() {
  // expected-error @+1 {{iota needs an i32 or float element type}}
  %0 = poot.iota dim = 0 : tensor<4xi1>
  return
}

// -----

func.func @dus_rank(%a: tensor<4x4xf32>, %u: tensor<4xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{update rank 1 must equal operand rank 2}}
  %0 = poot.dynamic_update_slice %a, %u, %p axis = 0 : tensor<4x4xf32>, tensor<4xf32>, tensor<i32>
  return
}

// -----

func.func @dus_axis(%a: tensor<4x4xf32>, %u: tensor<1x4xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = poot.dynamic_update_slice %a, %u, %p axis = 2 : tensor<4x4xf32>, tensor<1x4xf32>, tensor<i32>
  return
}

// -----

func.func @dus_other_dim(%a: tensor<4x4xf32>, %u: tensor<1x3xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{update dim 1 (3) must equal operand dim (4)}}
  %0 = poot.dynamic_update_slice %a, %u, %p axis = 0 : tensor<4x4xf32>, tensor<1x3xf32>, tensor<i32>
  return
}

// -----

func.func @dus_too_long(%a: tensor<4x4xf32>, %u: tensor<5x4xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{update dim 0 (5) must not exceed operand dim (4)}}
  %0 = poot.dynamic_update_slice %a, %u, %p axis = 0 : tensor<4x4xf32>, tensor<5x4xf32>, tensor<i32>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{element count changes}}
  %0 = poot.reshape %a : tensor<4x4xf32> -> tensor<15xf32>
  return
}

// -----

func.func @broadcast_bad(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{operand shape does not broadcast to the result}}
  %0 = poot.broadcast %a : tensor<3x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

func.func @transpose_len(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = poot.transpose %a perm = [0, 1, 2] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @transpose_dup(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{permutation is not a permutation of 0..1}}
  %0 = poot.transpose %a perm = [1, 1] : tensor<3x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @transpose_result(%a: tensor<3x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = poot.transpose %a perm = [1, 0] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @slice_entries(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{start, limit and strides need one entry per dimension (rank 2)}}
  %0 = poot.slice %a [0] to [3] step [1] : tensor<3x4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @slice_bounds(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{slice bounds of dim 1 must satisfy 0 <= start <= limit <= 4}}
  %0 = poot.slice %a [0, 2] to [3, 5] step [1, 1] : tensor<3x4xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @slice_stride(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{stride of dim 0 must be >= 1}}
  %0 = poot.slice %a [0, 0] to [3, 4] step [0, 1] : tensor<3x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<3x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = poot.concat %a, %a axis = 2 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<3x4xf32>, %b: tensor<3x4x1xf32>) {
  // expected-error @+1 {{all inputs need the same rank}}
  %0 = poot.concat %a, %b axis = 0 : (tensor<3x4xf32>, tensor<3x4x1xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{inputs differ in dim 1, which is not the concat axis}}
  %0 = poot.concat %a, %b axis = 0 : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<6x4xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = poot.concat axis = 0 : () -> tensor<6x4xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<3x4xf32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = poot.gather %a[%i] axis = 2 : (tensor<3x4xf32>, tensor<2xi32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_rank(%a: tensor<f32>, %i: tensor<1xi32>, %u: tensor<1xf32>) {
  // expected-error @+1 {{operand must have rank >= 1}}
  %0 = poot.scatter_update %a[%i], %u : tensor<f32>, tensor<1xi32>, tensor<1xf32>
  return
}

// -----

func.func @scatter_indices(%a: tensor<8x4xf32>, %i: tensor<1x2xi32>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{indices must be 1-D}}
  %0 = poot.scatter_update %a[%i], %u : tensor<8x4xf32>, tensor<1x2xi32>, tensor<2x4xf32>
  return
}

// -----

func.func @scatter_updates(%a: tensor<8x4xf32>, %i: tensor<2xi32>, %u: tensor<2x3xf32>) {
  // expected-error @+1 {{updates must be [indices.shape[0]] + operand.shape[1:] = [2, 4]}}
  %0 = poot.scatter_update %a[%i], %u : tensor<8x4xf32>, tensor<2xi32>, tensor<2x3xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{matmul operands need rank >= 2}}
  %0 = poot.matmul %a, %b : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_dtype(%a: tensor<4x4xf32>, %b: tensor<4x4xf16>) {
  // expected-error @+1 {{matmul operands need one element type}}
  %0 = poot.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf16>) -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_k(%a: tensor<4x3xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{contraction dims differ: lhs has 3, rhs has 4}}
  %0 = poot.matmul %a, %b : (tensor<4x3xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x4xf32>, %b: tensor<3x4x4xf32>) {
  // expected-error @+1 {{batch dims do not broadcast (numpy rules)}}
  %0 = poot.matmul %a, %b : (tensor<2x4x4xf32>, tensor<3x4x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @reduce_axis(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = poot.reduce sum %a axis = 2 : tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_bool(%a: tensor<4xi1>) {
  // expected-error @+1 {{max/min reductions need a numeric element type}}
  %0 = poot.reduce max %a axis = 0 : tensor<4xi1> -> tensor<i1>
  return
}

// -----

func.func @topk_k(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{k must satisfy 1 <= k <= 4, got 5}}
  %v, %i = poot.top_k %a k = 5 : tensor<2x4xf32> -> tensor<2x5xf32>, tensor<2x5xi32>
  return
}

// -----

func.func @topk_rank(%a: tensor<f32>) {
  // expected-error @+1 {{top_k needs rank >= 1}}
  %v, %i = poot.top_k %a k = 1 : tensor<f32> -> tensor<f32>, tensor<i32>
  return
}

// -----

func.func @binary_broadcast(%a: tensor<3x4xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{operand shapes do not broadcast (numpy rules)}}
  %0 = poot.add %a, %b : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @binary_dtype(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = poot.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @compare_dtype(%a: tensor<4xi32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{compared operands need one element type}}
  %0 = poot.compare lt, %a, %b : (tensor<4xi32>, tensor<4xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @select_dtype(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{on_true and on_false need one element type}}
  %0 = poot.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func @unary_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values with every dimension >= 1 and < 2^63 elements, but got 'tensor<4xi32>'}}
  %0 = poot.exp %a : tensor<4xi32>
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?xf32>) {
  // expected-error @+1 {{must be statically shaped tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type values with every dimension >= 1 and < 2^63 elements, but got 'tensor<?xf32>'}}
  %0 = poot.exp %a : tensor<?xf32>
  return
}

// -----

func.func @guard_bounds(%a: tensor<2xi32>) {
  // expected-error @+1 {{min (4) exceeds max (1)}}
  %0, %1 = poot.index_guard %a min = 4 max = 1 : tensor<2xi32>
  return
}

//===-- rope ------------------------------------------------------------===//

// -----

func.func @rope_odd_width(%x: tensor<2x5xf32>, %c: tensor<5xf32>) {
  // expected-error @+1 {{rotary width (the input's last dimension) must be even, got 'tensor<2x5xf32>'}}
  %0 = poot.rope %x, %c, %c : tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @rope_table_dtype(%x: tensor<2x4xf32>, %c: tensor<4xf16>, %s: tensor<4xf32>) {
  // expected-error @+1 {{cos needs the input's element type}}
  %0 = poot.rope %x, %c, %s : tensor<2x4xf32>, tensor<4xf16>, tensor<4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @rope_table_shape(%x: tensor<2x4xf32>, %c: tensor<4xf32>, %s: tensor<3x4xf32>) {
  // expected-error @+1 {{sin must broadcast to the input's shape (numpy rules): 'tensor<3x4xf32>' vs 'tensor<2x4xf32>'}}
  %0 = poot.rope %x, %c, %s : tensor<2x4xf32>, tensor<4xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @rope_result(%x: tensor<2x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<1x2x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = poot.rope %x, %c, %c : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x2x4xf32>
  return
}

// -----

// k becomes a result dimension: a negative k is refused before any type is
// built with it (it used to abort building tensor<2x-1xf32>).
func.func @topk_negative_k(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{k must satisfy 1 <= k <= 4, got -1}}
  %v, %i = poot.top_k %a k = -1 : tensor<2x4xf32> -> tensor<2x1xf32>, tensor<2x1xi32>
  return
}

// -----

// Zero-sized dimensions are refused at the type, on every op.
func.func @zero_sized(%a: tensor<0x4xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = poot.exp %a : tensor<0x4xf32>
  return
}

// -----

func.func @zero_sized_result(%a: tensor<2x4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor}}
  %0 = poot.slice %a [0, 1] to [2, 1] step [1, 1] : tensor<2x4xf32> -> tensor<2x0xf32>
  return
}

// -----

// The range analysis and the binders read declared bounds as i32 values.
// expected-error @+1 {{argument #0: declared range [0, 2147483648] does not fit the argument's i32 elements [-2147483648, 2147483647]}}
func.func @range_beyond_i32(%m: tensor<1x8xi32> {poot.range = #poot.range<0, 2147483648>}) { return }

// -----

// expected-error @+1 {{argument #0: declared range [-2147483649, 0] does not fit}}
func.func @range_below_i32(%m: tensor<i32> {poot.range = #poot.range<-2147483649, 0>}) { return }

// -----

// An element count past int64 (2^32 * 2^32) is refused at the type too:
// every getNumElements() on it would overflow.
func.func @count_overflow(%a: tensor<4294967296x4294967296xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = poot.reshape %a : tensor<4294967296x4294967296xf32> -> tensor<4294967296x2x2147483648xf32>
  return
}

// -----

// A stride near 2^63 used to overflow ceil((limit - start) / stride) into a
// negative result dimension (an abort building the type); the extent is 1.
func.func @slice_huge_stride(%k: tensor<1x2x8x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x2x8x1xf32>' are incompatible with return type(s) of operation 'tensor<1x2x8x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = poot.slice %k [0, 0, 0, 2] to [1, 2, 8, 4] step [1, 1, 1, 9223372036854775807] : tensor<1x2x8x4xf32> -> tensor<1x2x8x2xf32>
  return
}

// -----

// Concatenated sizes that overflow int64 are refused, not wrapped.
func.func @concat_overflow(%a: tensor<4611686018427387904xf32>) {
  // expected-error @+1 {{concatenated size along axis 0 overflows int64}}
  %0 = poot.concat %a, %a, %a axis = 0 : (tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>, tensor<4611686018427387904xf32>) -> tensor<4xf32>
  return
}
