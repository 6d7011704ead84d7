// SPDX-License-Identifier: MIT
// estimate: the C++ wrapper (llmem.hpp) on the question of estimate_llama.c
// -- the GPU memory of fully fine-tuning Llama-3.1-8B, bf16 mixed precision,
// AdamW, 4 sequences of 2048 tokens, flash attention -- then the same handle
// reused over batch sizes, as a scheduler would, and the job spread over 8
// GPUs with ZeRO-3.
//
// Build against an installed libllmem:
//     c++ -std=c++17 estimate.cpp $(pkg-config --cflags --libs libllmem) -o estimate
//
// Errors are exceptions (llmem::error) carrying the status and the
// library's message naming the field; the handles free themselves.
#include <llmem.hpp>

#include <cinttypes>
#include <cstdio>
#include <exception>

int main()
{
    try {
        llmem::Context ctx;  // first: it outlives the objects made from it
        auto model = llmem::Model::preset(ctx, "meta-llama/Llama-3.1-8B");
        llmem::Train train(ctx);
        train.set(LLMEM_TRAIN_BATCH, 4)
            .set(LLMEM_TRAIN_SEQ, 2048)
            .set(LLMEM_TRAIN_ATTENTION, "flash");
        llmem::Estimate est(ctx);
        est.run(model, train);

        std::printf("model: meta-llama/Llama-3.1-8B, %" PRIu64 " parameters\n",
                    model.param_count());
        std::printf("peak allocated: %" PRIu64 " bytes\n", est.peak_allocated());
        std::printf("peak reserved: %" PRIu64 " bytes\n", est.peak_reserved());
        std::printf("peak device: %" PRIu64 " bytes\n", est.peak_device());
        std::printf("peak phase: %s\n", llmem_phase_name(est.peak_phase()));
        for (int kind = LLMEM_TERM_PARAMETERS; kind <= LLMEM_TERM_TEMPORARY; kind++) {
            const llmem::Term term = est.term(kind);
            std::printf("term %s: %" PRIu64 " bytes at the peak\n", term.name(),
                        term.bytes_at_peak());
            for (const auto &c : term.components())
                std::printf("  %s: %" PRIu64 " bytes\n", c.name.c_str(), c.bytes);
        }

        // The same handles over batch sizes: no allocation per run.
        for (std::int64_t batch = 1; batch <= 8; batch *= 2)
            std::printf("batch %" PRId64 ": %" PRIu64 " bytes\n", batch,
                        est.run(model, train.set(LLMEM_TRAIN_BATCH, batch)).peak_allocated());

        // The same job on 8 GPUs with DeepSpeed ZeRO-3: what each GPU holds.
        llmem::Parallel layout(ctx);
        layout.set(LLMEM_PARALLEL_DP, 8).set(LLMEM_PARALLEL_SHARDING, "zero3");
        est.run(model, train.set(LLMEM_TRAIN_BATCH, 4), layout);
        std::printf("dp 8, zero3: %" PRIu64 " bytes per GPU (device level)\n", est.peak_device());

        // A bad value: the exception carries the message and names the field.
        try {
            train.set(LLMEM_TRAIN_ATTENTION, "fast");
        } catch (const llmem::error &e) {
            std::printf("rejected: %s (%s; field %s)\n", e.what(), e.status_str(),
                        e.field() != nullptr ? e.field() : "none");
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "estimate: %s\n", e.what());
        return 1;
    }
}
