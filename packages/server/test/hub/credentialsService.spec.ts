import { roleArnOf } from '../../src/hub/credentialService';
import { PolicyError } from '../../src/hub/policy';

describe('roleArnOf', () => {
  it('is the configured role', () => {
    const arn = 'arn:aws:iam::123456789012:role/notebooks';
    expect(roleArnOf({ credentials_role_arn: arn, object_endpoint_url: undefined })).toBe(arn);
  });

  it('is required on AWS', () => {
    expect(() => roleArnOf({ credentials_role_arn: '', object_endpoint_url: undefined })).toThrow(
      PolicyError
    );
  });

  it('is a placeholder that STS accepts for an S3-compatible server, which ignores it', () => {
    const arn = roleArnOf({
      credentials_role_arn: '',
      object_endpoint_url: 'http://127.0.0.1:9000'
    });
    // AssumeRole requires 20 to 2048 characters.
    expect(arn.length).toBeGreaterThanOrEqual(20);
    expect(arn).toMatch(/^arn:aws:iam::\d{12}:role\//);
  });
});
