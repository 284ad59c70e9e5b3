-- CreateTable
CREATE TABLE "live_slot" (
    "id" UUID NOT NULL,
    "account_id" VARCHAR(128) NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "live_slot_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "live_slot_account_id_expires_at_idx" ON "live_slot"("account_id", "expires_at");

-- AddForeignKey
ALTER TABLE "live_slot" ADD CONSTRAINT "live_slot_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "account"("id") ON DELETE CASCADE ON UPDATE CASCADE;
