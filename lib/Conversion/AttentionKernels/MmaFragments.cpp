//===- MmaFragments.cpp - mma.sync fragments for the tensor-core kernels ---===//
#include "lib/Conversion/AttentionKernels/MmaFragments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::poot;

MmaBuilder::MmaBuilder(OpBuilder &b, Location loc, Type element)
    : KernelBuilder(b, loc), element(element), bf16(element.isBF16()) {}

Value MmaBuilder::i32(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

Value MmaBuilder::zeroElement() {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0.0));
}

Value MmaBuilder::ult(Value x, Value y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
}

Value MmaBuilder::both(Value x, Value y) {
  return arith::AndIOp::create(b, loc, x, y);
}

Value MmaBuilder::minui(Value x, Value y) {
  return arith::MinUIOp::create(b, loc, x, y);
}

Value MmaBuilder::maxf(Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}

Value MmaBuilder::raw(Value mem, Value idx) {
  return memref::LoadOp::create(b, loc, mem, ValueRange{idx});
}

Value MmaBuilder::packWord(Value lo, Value hi) {
  auto pair = VectorType::get({2}, element);
  Value v = vector::FromElementsOp::create(b, loc, pair, ValueRange{lo, hi});
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), v);
}

Value MmaBuilder::roundWord(Value lo, Value hi) {
  auto pair = VectorType::get({2}, b.getF32Type());
  Value v = vector::FromElementsOp::create(b, loc, pair, ValueRange{lo, hi});
  Value narrow =
      arith::TruncFOp::create(b, loc, VectorType::get({2}, element), v);
  return LLVM::BitcastOp::create(b, loc, b.getI32Type(), narrow);
}

Value MmaBuilder::globalPtr(Value base, Value at) {
  Value address = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                             add(base, mul(at, index(2))));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), address);
}

Value MmaBuilder::sharedPtr(Value base, Value byteOffset) {
  Value address = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                             add(base, byteOffset));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

void MmaBuilder::copyAsync(Value to, Value from, Value bytes) {
  NVVM::CpAsyncOp::create(
      b, loc, to, from, b.getI32IntegerAttr(16),
      NVVM::LoadCacheModifierKindAttr::get(b.getContext(),
                                           NVVM::LoadCacheModifierKind::CG),
      bytes);
}

SmallVector<Value> MmaBuilder::ldmatrix(Value ptr, int64_t num, bool trans) {
  MLIRContext *ctx = b.getContext();
  Type i32Type = b.getI32Type();
  Type result =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(num, i32Type));
  auto op = NVVM::LdMatrixOp::create(
      b, loc, result, ptr, b.getI32IntegerAttr(num),
      NVVM::MMALayoutAttr::get(ctx, trans ? NVVM::MMALayout::col
                                          : NVVM::MMALayout::row),
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
      NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
  SmallVector<Value> words;
  for (int64_t i = 0; i < num; ++i)
    words.push_back(LLVM::ExtractValueOp::create(b, loc, op.getRes(),
                                                 ArrayRef<int64_t>{i}));
  return words;
}

Value MmaBuilder::operand(Value word) {
  if (bf16)
    return word;
  return LLVM::BitcastOp::create(b, loc, VectorType::get({2}, element), word);
}

MmaAcc MmaBuilder::mma(ArrayRef<Value> a, ArrayRef<Value> bw,
                       const MmaAcc &c) {
  SmallVector<Value> aOps, bOps;
  for (Value w : a)
    aOps.push_back(operand(w));
  for (Value w : bw)
    bOps.push_back(operand(w));
  Type f32Type = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {f32Type, f32Type, f32Type, f32Type});
  NVVM::MMATypes type = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  auto op = NVVM::MmaOp::create(
      b, loc, result, aOps, bOps, ValueRange(c), {16, 8, 16},
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  MmaAcc d;
  for (int64_t i = 0; i < 4; ++i)
    d[i] = LLVM::ExtractValueOp::create(b, loc, op.getRes(),
                                        ArrayRef<int64_t>{i});
  return d;
}

MmaAcc MmaBuilder::zeroAcc() {
  Value zero = f32(0.0);
  return {zero, zero, zero, zero};
}

Value MmaBuilder::shuffleXor(Value v, int32_t offset) {
  return gpu::ShuffleOp::create(b, loc, v, offset, kWarp,
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Value MmaBuilder::quadSum(Value v) {
  v = add(v, shuffleXor(v, 1));
  return add(v, shuffleXor(v, 2));
}

Value MmaBuilder::quadMax(Value v) {
  v = maxf(v, shuffleXor(v, 1));
  return maxf(v, shuffleXor(v, 2));
}

FragmentSoftmax MmaBuilder::softmaxStep(MutableArrayRef<MmaAcc> s,
                                        std::array<Value, 2> mOld) {
  Value ninf = f32(-std::numeric_limits<double>::infinity());
  FragmentSoftmax step;
  // Row half h is accumulators 2h, 2h + 1 of every tile: the quad's four
  // threads hold the row's tile between them.
  for (int h = 0; h < 2; ++h) {
    Value mx = ninf;
    for (MmaAcc &tile : s)
      mx = maxf(mx, maxf(tile[2 * h], tile[2 * h + 1]));
    step.max[h] = maxf(mOld[h], quadMax(mx));
    step.rescale[h] = weight(mOld[h], step.max[h]);
    step.sum[h] = f32(0.0);
  }
  for (MmaAcc &tile : s)
    for (int64_t i = 0; i < 4; ++i) {
      // weight(): a hidden key (-inf) adds exactly 0, also in a row that
      // has seen nothing yet (m' = -inf).
      tile[i] = weight(tile[i], step.max[i / 2]);
      step.sum[i / 2] = add(step.sum[i / 2], tile[i]);
    }
  return step;
}

SmallVector<MmaFrag> MmaBuilder::pFragments(ArrayRef<MmaAcc> s) {
  SmallVector<MmaFrag> p(s.size() / 2);
  for (size_t ks = 0; ks < p.size(); ++ks)
    p[ks] = {roundWord(s[2 * ks][0], s[2 * ks][1]),
             roundWord(s[2 * ks][2], s[2 * ks][3]),
             roundWord(s[2 * ks + 1][0], s[2 * ks + 1][1]),
             roundWord(s[2 * ks + 1][2], s[2 * ks + 1][3])};
  return p;
}
