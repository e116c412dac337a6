# RUN: %python %s | FileCheck %s
# RUN: %python %s --loc | poot-opt -poot-verify-driver-contract --mlir-print-debuginfo | FileCheck %s
# RUN: %python %s --loc | FileCheck %s --check-prefix=LOC

# The tracer's driver contract (names, slots, ranges, in declaration order),
# Tensor operator sugar with scalar constants, and source locations: every op
# carries the line of the user's call (a composite's ops all carry the call's
# line).

import sys

from poot_mlir.frontend import Tracer, ops

WITH_LOCATIONS = "--loc" in sys.argv


def line_of(marker: str) -> int:
    """The line of this file that ends with `# <marker>`."""
    with open(__file__) as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith("# " + marker) and "line_of" not in text:
                return number
    raise LookupError(marker)


def markers() -> None:
    tr = Tracer("markers")  # LINE-TRACER
    cache = tr.state("cache", (4, 2), "f32")
    pos = tr.pos(max_pos=3)
    x = tr.input("x", (1, 2), "f32")
    ids = tr.input("ids", (3,), "i32", range=(0, 9))
    write = tr.input("write", (1,), "i32", range=(-1, 3), slot="write_map")
    read = tr.input("read", (1, 4), "i32", range=(0, 3), slot="slot_map")
    y = (x * 2.0 + 1.0) / x - x  # LINE-Y
    z = -(3.0 - y)
    new = ops.dynamic_update_slice(cache, z, pos, 0)  # LINE-DUS
    _, ok = ops.index_guard(ids, 0, 9)
    tr.output("y", y @ ops.transpose(z, (1, 0)))
    tr.state_out("cache", new)
    tr.validation("ids_ok", ok)
    tr.output("maps", ops.add(ops.gather(ids, write, 0), ops.reduce_sum(read, 1)))
    if WITH_LOCATIONS:
        # FileCheck (the Python port) has no @LINE arithmetic: it reads the
        # expected line numbers from these comments.
        for marker in ("LINE-TRACER", "LINE-Y", "LINE-DUS"):
            print(f"// {marker} {line_of(marker)}")
    print(tr.mlir(debug_info=WITH_LOCATIONS))


# CHECK-LABEL: func.func @markers(
# CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<4x2xf32> {poot.name = "cache", poot.slot = #poot.slot<state "cache">}
# CHECK-SAME: %[[POS:[a-z0-9]+]]: tensor<i32> {poot.name = "pos", poot.range = #poot.range<0, 3>, poot.slot = #poot.slot<pos>}
# CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<1x2xf32> {poot.name = "x"}
# CHECK-SAME: %{{[a-z0-9]+}}: tensor<3xi32> {poot.name = "ids", poot.range = #poot.range<0, 9>}
# CHECK-SAME: %{{[a-z0-9]+}}: tensor<1xi32> {poot.name = "write", poot.range = #poot.range<-1, 3>, poot.slot = #poot.slot<write_map>}
# CHECK-SAME: %{{[a-z0-9]+}}: tensor<1x4xi32> {poot.name = "read", poot.range = #poot.range<0, 3>, poot.slot = #poot.slot<slot_map>}
# CHECK-SAME: -> (tensor<1x1xf32> {poot.name = "y"}, tensor<4x2xf32> {poot.name = "cache", poot.slot = #poot.slot<state "cache">}, tensor<i1> {poot.name = "ids_ok", poot.slot = #poot.slot<validation>}, tensor<1xi32> {poot.name = "maps"})
# CHECK-NEXT: %[[TWO:.*]] = poot.constant dense<2.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[A:.*]] = poot.mul %[[X]], %[[TWO]] : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
# CHECK-NEXT: %[[ONE:.*]] = poot.constant dense<1.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[B:.*]] = poot.add %[[A]], %[[ONE]]
# CHECK-NEXT: %[[D:.*]] = poot.div %[[B]], %[[X]]
# CHECK-NEXT: %[[Y:.*]] = poot.sub %[[D]], %[[X]]
# CHECK-NEXT: %[[THREE:.*]] = poot.constant dense<3.000000e+00> : tensor<f32>
# CHECK-NEXT: %[[E:.*]] = poot.sub %[[THREE]], %[[Y]] : (tensor<f32>, tensor<1x2xf32>) -> tensor<1x2xf32>
# CHECK-NEXT: %[[Z:.*]] = poot.neg %[[E]]
# CHECK-NEXT: poot.dynamic_update_slice %[[C]], %[[Z]], %[[POS]] axis = 0 : tensor<4x2xf32>, tensor<1x2xf32>, tensor<i32>
# CHECK-NEXT: poot.index_guard %{{.*}} min = 0 max = 9 : tensor<3xi32>
# CHECK-NEXT: %[[ZT:.*]] = poot.transpose %[[Z]] perm = [1, 0]
# CHECK-NEXT: poot.matmul %[[Y]], %[[ZT]] : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>

# LOC: // LINE-TRACER [[#LT:]]
# LOC: // LINE-Y [[#LY:]]
# LOC: // LINE-DUS [[#LD:]]
# LOC-LABEL: func.func @markers(
# LOC: poot.constant dense<2.000000e+00> : tensor<f32> loc(#[[LOCY:loc[0-9]*]])
# LOC-NEXT: poot.mul {{.*}} loc(#[[LOCY]])
# LOC: poot.dynamic_update_slice {{.*}} loc(#[[LOCD:loc[0-9]*]])
# LOC: } loc(#[[LOCT:loc[0-9]*]])
# LOC-DAG: #[[LOCT]] = loc("{{.*}}tracer.py":[[#LT]]:{{[0-9]+}})
# LOC-DAG: #[[LOCY]] = loc("{{.*}}tracer.py":[[#LY]]:{{[0-9]+}})
# LOC-DAG: #[[LOCD]] = loc("{{.*}}tracer.py":[[#LD]]:{{[0-9]+}})

markers()
