// RUN: poot-opt %s -split-input-file -verify-diagnostics

// A request read back from text is checked: the launch builder allocates
// rows x splits x (value_width + 2) floats of scratch from it (a negative
// width aborted poot-gpu-attention-launches: the 2026-12-06 campaign).

// expected-error @+1 {{attention_request: value_width must be at least 1, got -76}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = -76, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1>}

// -----

// expected-error @+1 {{attention_request: splits must be at least 1, got 0}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 0, chunk = 128, grid_x = 16, grid_y = 1>}

// -----

// expected-error @+1 {{attention_request: q_heads (5) is not a multiple of kv_heads (2)}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 5, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1>}

// -----

// expected-error @+1 {{attention_request: key_block must not be negative, got -1}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1, q_block = 0, key_block = -1>}

// -----

// expected-error @+1 {{attention_request: a window needs the causal mask}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 8, key_len = 8, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = streaming, lanes = 64, splits = 1, chunk = 8, grid_x = 32, grid_y = 1, window = 4>}

// -----

// expected-error @+1 {{attention_request: window must not be negative, got -1}}
func.func private @f() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 8, key_len = 8, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = causal, key_bound = capacity, schedule = streaming, lanes = 64, splits = 1, chunk = 8, grid_x = 32, grid_y = 1, window = -1>}

// -----

// A valid one parses.
func.func private @ok() attributes {r = #poot.attention_request<batch = 1, q_heads = 4, kv_heads = 2, q_len = 1, key_len = 512, key_width = 16, shared_width = 0, value_width = 16, transform = scale, mask = none, key_bound = capacity, schedule = split_kv, lanes = 64, splits = 4, chunk = 128, grid_x = 16, grid_y = 1>}
