-- CreateTable
CREATE TABLE "export_fragment" (
    "app_id" VARCHAR(16) NOT NULL,
    "market_hash_name" VARCHAR(255) NOT NULL,
    "side" VARCHAR(8) NOT NULL,
    "digest" CHAR(32) NOT NULL,
    "deflated" BYTEA,
    "quote_count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "export_fragment_pkey" PRIMARY KEY ("app_id","market_hash_name","side")
);
