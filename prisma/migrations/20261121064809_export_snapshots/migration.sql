-- CreateTable
CREATE TABLE "export_build" (
    "id" BIGSERIAL NOT NULL,
    "app_id" VARCHAR(16) NOT NULL,
    "side" VARCHAR(8) NOT NULL,
    "etag" VARCHAR(80),
    "items_sha256" CHAR(64),
    "generated_at" TIMESTAMPTZ(3) NOT NULL,
    "build_ms" INTEGER,
    "byte_size" BIGINT,
    "item_count" INTEGER,
    "quote_count" INTEGER,
    "complete" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "export_build_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "export_chunk" (
    "build_id" BIGINT NOT NULL,
    "seq" INTEGER NOT NULL,
    "bytes" BYTEA NOT NULL,

    CONSTRAINT "export_chunk_pkey" PRIMARY KEY ("build_id","seq")
);

-- CreateTable
CREATE TABLE "export_current" (
    "app_id" VARCHAR(16) NOT NULL,
    "side" VARCHAR(8) NOT NULL,
    "build_id" BIGINT NOT NULL,

    CONSTRAINT "export_current_pkey" PRIMARY KEY ("app_id","side")
);

-- AddForeignKey
ALTER TABLE "export_chunk" ADD CONSTRAINT "export_chunk_build_id_fkey" FOREIGN KEY ("build_id") REFERENCES "export_build"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "export_current" ADD CONSTRAINT "export_current_build_id_fkey" FOREIGN KEY ("build_id") REFERENCES "export_build"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
