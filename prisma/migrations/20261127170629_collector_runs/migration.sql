-- CreateTable
CREATE TABLE "collector_run" (
    "id" BIGSERIAL NOT NULL,
    "source_id" VARCHAR(64) NOT NULL,
    "worker" VARCHAR(128) NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3) NOT NULL,
    "outcome" VARCHAR(16) NOT NULL,
    "complete" BOOLEAN NOT NULL DEFAULT false,
    "markets" JSONB NOT NULL DEFAULT '{}',
    "rows_accepted" INTEGER NOT NULL DEFAULT 0,
    "rows_skipped" INTEGER NOT NULL DEFAULT 0,
    "skips" JSONB NOT NULL DEFAULT '{}',
    "error_kind" VARCHAR(16),
    "error_message" VARCHAR(1000),

    CONSTRAINT "collector_run_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "collector_run_source_id_started_at_idx" ON "collector_run"("source_id", "started_at");
