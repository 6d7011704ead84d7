/* SPDX-License-Identifier: MIT */
/* The source article's formula (LLMEM_FORMULA_ARTICLE): its four terms summed. */
#ifndef LLMEM_ESTIMATE_ARTICLE_H
#define LLMEM_ESTIMATE_ARTICLE_H

#include "estimate/results.h"
#include "model/model.h"
#include "train/setup.h"

int llmem_article_estimate(llmem_ctx *ctx, est_results *r, const model_params *p,
                           const llmem_train *t, const setup *s);

#endif
