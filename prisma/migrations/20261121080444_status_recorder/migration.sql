-- CreateTable
CREATE TABLE "status_infrastructure" (
    "component" VARCHAR(32) NOT NULL,
    "bucket_start" TIMESTAMPTZ(3) NOT NULL,
    "ok" BOOLEAN NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "detail" VARCHAR(200),
    "checked_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "status_infrastructure_pkey" PRIMARY KEY ("component","bucket_start")
);

-- CreateTable
CREATE TABLE "status_service" (
    "component" VARCHAR(32) NOT NULL,
    "bucket_start" TIMESTAMPTZ(3) NOT NULL,
    "ok_count" INTEGER NOT NULL,
    "total" INTEGER NOT NULL,
    "latency_ms_sum" BIGINT NOT NULL,

    CONSTRAINT "status_service_pkey" PRIMARY KEY ("component","bucket_start")
);

-- CreateTable
CREATE TABLE "ingest_activity" (
    "market_code" VARCHAR(32) NOT NULL,
    "minute_start" TIMESTAMPTZ(3) NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "ingest_activity_pkey" PRIMARY KEY ("market_code","minute_start")
);

-- CreateTable
CREATE TABLE "status_summary" (
    "area" VARCHAR(32) NOT NULL,
    "hour_start" TIMESTAMPTZ(3) NOT NULL,
    "score" DECIMAL(5,2) NOT NULL,

    CONSTRAINT "status_summary_pkey" PRIMARY KEY ("area","hour_start")
);

-- CreateTable
CREATE TABLE "job_run" (
    "job" VARCHAR(32) NOT NULL,
    "last_started_at" TIMESTAMPTZ(3),
    "last_ok_at" TIMESTAMPTZ(3),
    "last_error_at" TIMESTAMPTZ(3),
    "last_error" VARCHAR(500),

    CONSTRAINT "job_run_pkey" PRIMARY KEY ("job")
);

-- CreateIndex
CREATE INDEX "status_infrastructure_bucket_start_idx" ON "status_infrastructure"("bucket_start");

-- CreateIndex
CREATE INDEX "status_service_bucket_start_idx" ON "status_service"("bucket_start");

-- CreateIndex
CREATE INDEX "ingest_activity_minute_start_idx" ON "ingest_activity"("minute_start");
